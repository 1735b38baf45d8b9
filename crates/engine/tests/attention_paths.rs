//! The CPU engine's attention paths (`fast::attention` for a prefill's
//! rows, `fast::attention_step` for a decode step's) against the twin
//! `attention::run_cpu`, bit for bit, in every compiled copy.
#![cfg(not(target_arch = "wasm32"))]

use decode_lab_engine::fast;

#[path = "shared/attention_cases.rs"]
mod attention_cases;

use attention_cases::{against_twin, step, SHAPES};

/// A prefill's attention over keys laid out across (`fast::attention`)
/// gives the twin's bits in AVX-512, AVX2 and the portable loops: every
/// shape, key counts that end on every size of last block, and caches
/// already holding keys (up to 1757).
#[test]
fn a_prefills_attention_over_keys_across_gives_the_twins_bits() {
    use decode_lab_engine::fast::attention::prefill;
    let sizes = [(1, 0), (4, 0), (63, 0), (65, 1), (6, 124), (5, 130), (70, 1687)];
    for shape in SHAPES {
        for size in sizes {
            let check = || against_twin(shape, size, &prefill);
            assert_eq!(check(), Ok(()), "by the core's choice");
            assert_eq!(fast::parallel::with_wide_panels(check), Ok(()), "AVX-512");
            assert_eq!(fast::parallel::with_narrow_panels(check), Ok(()), "AVX2");
            assert_eq!(fast::parallel::without_avx2(check), Ok(()), "portable");
        }
    }
}

#[test]
fn a_decode_steps_attention_turned_across_gives_the_twins_bits() {
    attention_cases::step_gives_the_twins_bits("by the core's choice");
    fast::parallel::without_avx2(|| attention_cases::step_gives_the_twins_bits("portable"));
}

/// A step's one row over a long cache has its heads cut among threads
/// (`fast::attention_step::head_parts`, as `run` cuts them): the
/// twin's bits on three threads, for shapes whose heads each read their
/// own cache columns (and GQA's shared ones), cut into two and three parts.
#[test]
fn a_decode_steps_attention_cut_by_heads_gives_the_twins_bits() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("pool");
    pool.install(|| {
        for (shape, keys0, parts) in
            [((384, 64, 1), 1756, 3), ((320, 32, 1), 120, 2), ((384, 64, 2), 100, 2)]
        {
            let (n_embd, head_size, group) = shape;
            let heads = decode_lab_engine::kernels::Heads { n_embd, head_size, group };
            let cut = fast::attention_step::head_parts(heads, 1, keys0);
            assert_eq!(cut.len(), parts, "{shape:?} after {keys0}: {cut:?}");
            assert_eq!(against_twin(shape, (1, keys0), &step), Ok(()), "three threads");
        }
        attention_cases::step_gives_the_twins_bits("three threads");
    });
}
