//! Counts the docs state are the counts of the things they count: the
//! course note's embeds, the widget table's widgets, the golden beam
//! searches. A stale number fails here, not in a reader's hands.

use decode_lab_contract::WIDGETS;

fn read(path: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::read_to_string(format!("{root}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const DOCS: [&str; 3] = ["README.md", "EMBEDDING.md", "ARCHITECTURE.md"];

/// A count written before `noun` (`19 embeds`, `nineteen live embeds`), or `None`.
fn count_before(words: &[&str]) -> Option<usize> {
    const NAMES: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let word = words.iter().rev().find(|w| !matches!(**w, "live" | "golden"))?;
    let word = word.trim_start_matches(['(', '*']).to_lowercase();
    word.parse().ok().or_else(|| NAMES.iter().position(|n| *n == word))
}

/// Every count the docs write before `noun`, with where it stands.
fn counts(noun: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for doc in DOCS {
        let text = read(doc);
        for (line, row) in text.lines().enumerate() {
            let mut rest = row;
            while let Some(at) = rest.find(noun) {
                let before: Vec<&str> = rest[..at].split_whitespace().collect();
                let tail = &before[before.len().saturating_sub(3)..];
                if let Some(n) = count_before(tail) {
                    found.push((n, format!("{doc}:{}: …{} {noun}", line + 1, tail.join(" "))));
                }
                rest = &rest[at + noun.len()..];
            }
        }
    }
    found
}

#[test]
fn counts_in_the_docs_are_the_counts() {
    let embeds = read("examples/course-note.html").matches("<iframe").count();
    let beams = read("tests/fixtures/golden/beam.json").matches("\"width\"").count();
    let checks =
        [("embeds", embeds), ("widgets of the table", WIDGETS.len()), ("golden searches", beams)];
    for (noun, want) in checks {
        let found = counts(noun);
        assert!(!found.is_empty(), "no doc counts {noun}");
        for (n, at) in found {
            assert_eq!(n, want, "{at}: the docs say {n}, there are {want}");
        }
    }
}
