//! The memory bandwidth a card's maker publishes, for the cards this
//! project is measured on: the bench prints the read rate it measured beside
//! it, so a yardstick that reads slow (a kernel bound by something other
//! than bytes) shows as a small share of the card's peak instead of passing
//! for the card's own rate.

/// A card's published peak memory bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The card, as its maker names it.
    pub card: &'static str,
    pub bytes_per_s: f64,
}

/// What each card's adapter name contains, most specific first (an H100
/// PCIe also contains "H100"), and its published bandwidth in GB/s.
const CARDS: [(&str, &str, f64); 16] = [
    ("H200", "NVIDIA H200", 4800.0),
    ("H100 NVL", "NVIDIA H100 NVL", 3900.0),
    ("H100 PCIe", "NVIDIA H100 PCIe", 2000.0),
    ("H100", "NVIDIA H100 SXM", 3350.0),
    ("A100-SXM4-80GB", "NVIDIA A100 80GB SXM", 2039.0),
    ("A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 1935.0),
    ("A100", "NVIDIA A100 40GB", 1555.0),
    ("L40S", "NVIDIA L40S", 864.0),
    ("NVIDIA L4", "NVIDIA L4", 300.0),
    ("Tesla T4", "NVIDIA T4", 320.0),
    ("RTX 4090", "NVIDIA GeForce RTX 4090", 1008.0),
    ("RTX 3090", "NVIDIA GeForce RTX 3090", 936.0),
    ("Apple M2 Max", "Apple M2 Max", 400.0),
    ("Apple M2 Pro", "Apple M2 Pro", 200.0),
    ("Apple M2", "Apple M2", 100.0),
    ("Apple M1", "Apple M1", 68.25),
];

/// The published bandwidth of the card `adapter` names, if it is one of
/// [`CARDS`] (`None` for any other, and for software adapters).
pub fn published(adapter: &str) -> Option<Published> {
    let (_, card, gb) = CARDS.iter().find(|(part, _, _)| adapter.contains(part))?;
    Some(Published { card, bytes_per_s: gb * 1e9 })
}

/// The bench's words for a read rate against the card's peak:
/// `61.2 % of the NVIDIA H200's published 4800 GB/s`, or `None`.
pub fn share(adapter: &str, read_bytes_per_s: f64) -> Option<String> {
    let p = published(adapter)?;
    Some(format!(
        "{:.1} % of the {}'s published {:.0} GB/s",
        100.0 * read_bytes_per_s / p.bytes_per_s,
        p.card,
        p.bytes_per_s / 1e9
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_are_matched_most_specific_first() {
        let name = |a: &str| published(a).map(|p| p.card);
        assert_eq!(name("NVIDIA H200 (Vulkan)"), Some("NVIDIA H200"));
        assert_eq!(name("NVIDIA H100 80GB HBM3 (Vulkan)"), Some("NVIDIA H100 SXM"));
        assert_eq!(name("NVIDIA H100 PCIe (Vulkan)"), Some("NVIDIA H100 PCIe"));
        assert_eq!(name("NVIDIA L40S (Vulkan)"), Some("NVIDIA L40S"));
        assert_eq!(name("NVIDIA L4 (Vulkan)"), Some("NVIDIA L4"));
        assert_eq!(name("Apple M2 Pro (Metal)"), Some("Apple M2 Pro"));
        assert_eq!(name("llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)"), None);
        assert_eq!(
            share("NVIDIA H200 (Vulkan)", 2.937e12).as_deref(),
            Some("61.2 % of the NVIDIA H200's published 4800 GB/s")
        );
        // Every row is reachable: no earlier row's part is inside a later one's.
        for (i, (part, _, _)) in CARDS.iter().enumerate() {
            assert_eq!(CARDS.iter().position(|(p, _, _)| part.contains(p)), Some(i), "{part}");
        }
    }
}
