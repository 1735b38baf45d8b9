//! The chooser's rules, with trials read from a table instead of a GPU.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;

use super::*;

const CPU: Profile = Profile::Cpu;
const GPU2: Profile = Profile::Gpu(Split { wide: 2 });
const GPU4: Profile = Profile::Gpu(Split { wide: 4 });
const GPU8: Profile = Profile::Gpu(Split { wide: 8 });

/// Trials from a table: each profile's ms/token, or the error it fails with
/// (compiling or running); every run is logged.
struct Table {
    results: HashMap<Profile, Result<f64, String>>,
    runs: Vec<(Vec<Profile>, bool)>,
}

impl Table {
    fn new(rows: &[(Profile, Result<f64, &str>)]) -> Table {
        let results = rows.iter().map(|(p, r)| (*p, (*r).map_err(str::to_string))).collect();
        Table { results, runs: Vec::new() }
    }
}

impl Trials for Table {
    async fn run(&mut self, candidates: &[Profile], time: bool) -> Vec<Result<f64, String>> {
        self.runs.push((candidates.to_vec(), time));
        candidates
            .iter()
            .map(|p| match self.results.get(p).cloned().unwrap_or(Err("not in the table".into())) {
                Ok(ms) => Ok(if time { ms } else { 0.0 }),
                Err(e) => Err(e),
            })
            .collect()
    }
}

#[derive(Default)]
struct Store(RefCell<HashMap<String, String>>);

impl Memory for Store {
    fn get(&self, key: &str) -> Option<String> {
        self.0.borrow().get(key).cloned()
    }
    fn set(&self, key: &str, value: &str) {
        self.0.borrow_mut().insert(key.into(), value.into());
    }
}

fn choose_now(
    choice: KernelsChoice,
    software: bool,
    memory: Option<(&dyn Memory, &str)>,
    table: &mut Table,
) -> Result<Chosen, String> {
    // The table's trials never wait: one poll finishes the choice.
    let mut choosing = std::pin::pin!(choose(choice, software, Format::F16, memory, table));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match choosing.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(chosen) => chosen,
        std::task::Poll::Pending => panic!("a table's trials never wait"),
    }
}

fn times(cpu: f64, g2: f64, g4: f64, g8: f64) -> Table {
    Table::new(&[(CPU, Ok(cpu)), (GPU2, Ok(g2)), (GPU4, Ok(g4)), (GPU8, Ok(g8))])
}

#[test]
fn auto_keeps_the_fastest_and_never_one_slower_than_the_cpu_profile() {
    let mut t = times(26.3, 1.07, 1.15, 1.66);
    let c = choose_now(KernelsChoice::Auto, false, None, &mut t).unwrap();
    assert_eq!((c.profile, c.reason.clone()), (GPU2, Reason::Timed));
    assert_eq!(t.runs, vec![(vec![CPU, GPU2, GPU4, GPU8], true)]);
    assert_eq!(
        c.describe(),
        "gpu-2 (timed: cpu 26.300, gpu-2 1.070, gpu-4 1.150, gpu-8 1.660 ms/token)"
    );
    // A GPU on which the split kernels lose keeps the cpu profile.
    let mut t = times(0.9, 1.07, 1.15, 1.66);
    assert_eq!(choose_now(KernelsChoice::Auto, false, None, &mut t).unwrap().profile, CPU);
    // `gpu` times the gpu layouts only; a name is taken untimed.
    let mut t = times(0.9, 1.07, 0.95, 1.66);
    let c = choose_now(KernelsChoice::Gpu, false, None, &mut t).unwrap();
    assert_eq!((c.profile, t.runs[0].0.clone()), (GPU4, vec![GPU2, GPU4, GPU8]));
    let mut t = times(0.9, 1.07, 0.95, 1.66);
    let c = choose_now(KernelsChoice::Exactly(GPU8), false, None, &mut t).unwrap();
    assert_eq!((c.profile, c.reason, t.runs), (GPU8, Reason::Asked, vec![(vec![GPU8], false)]));
}

#[test]
fn a_software_adapter_gets_the_cpu_profile_untimed() {
    let mut t = times(5.0, 1.0, 1.0, 1.0);
    let c = choose_now(KernelsChoice::Auto, true, None, &mut t).unwrap();
    assert_eq!((c.profile, c.reason, t.runs), (CPU, Reason::Software, vec![(vec![CPU], false)]));
}

#[test]
fn a_candidate_that_fails_to_compile_or_errors_loses_and_all_failing_is_a_sentence() {
    let mut t = Table::new(&[
        (CPU, Ok(3.0)),
        (GPU2, Err("shader compilation failed")),
        (GPU4, Ok(1.2)),
        (GPU8, Err("device lost")),
    ]);
    let c = choose_now(KernelsChoice::Auto, false, None, &mut t).unwrap();
    assert_eq!(c.profile, GPU4);
    assert_eq!(
        c.describe(),
        "gpu-4 (timed: cpu 3.000, gpu-2 failed, gpu-4 1.200, gpu-8 failed ms/token)"
    );
    let mut t = Table::new(&[(GPU2, Err("lost")), (GPU4, Err("lost")), (GPU8, Err("too big"))]);
    let e = choose_now(KernelsChoice::Gpu, false, None, &mut t).unwrap_err();
    assert_eq!(
        e,
        "no kernel profile ran on this GPU: gpu-2 failed (lost); gpu-4 failed (lost); gpu-8 failed (too big)"
    );
}

#[test]
fn a_timed_choice_is_remembered_per_adapter_model_and_format_and_used_untimed() {
    let store = Store::default();
    let config = Config::from_json(
        r#"{"model_type":"gpt2","n_layer":4,"n_head":4,"n_embd":256,"n_positions":256,"vocab_size":2048}"#,
    )
    .unwrap();
    let here = key("b1", "NVIDIA H200 (Vulkan)", &config, Format::F16);
    let mut t = times(26.3, 1.07, 1.15, 1.66);
    choose_now(KernelsChoice::Auto, false, Some((&store, &here)), &mut t).unwrap();
    assert_eq!(store.get(&here).as_deref(), Some("gpu-2"));
    // The next load takes it without a trial.
    let mut t = times(26.3, 9.0, 1.15, 1.66);
    let c = choose_now(KernelsChoice::Auto, false, Some((&store, &here)), &mut t).unwrap();
    assert_eq!(
        (c.profile, c.reason, t.runs),
        (GPU2, Reason::Remembered, vec![(vec![GPU2], false)])
    );
    assert_eq!(c.trials, vec![]);
    // Another format, adapter or model shape is another key: timed afresh.
    let others = [
        key("b1", "NVIDIA H200 (Vulkan)", &config, Format::Int4),
        key("b1", "Apple M2 (Metal)", &config, Format::F16),
        key("b1", "NVIDIA H200 (Vulkan)", &Config { n_layer: 12, ..config.clone() }, Format::F16),
    ];
    for other in others {
        assert_ne!(other, here);
        let mut t = times(26.3, 9.0, 1.15, 1.66);
        let c = choose_now(KernelsChoice::Auto, false, Some((&store, &other)), &mut t).unwrap();
        assert_eq!((c.profile, c.reason), (GPU4, Reason::Timed), "{other}");
    }
    // Asked for by name, or a software adapter's: nothing measured, nothing kept.
    let fresh = Store::default();
    let mut t = times(1.0, 1.0, 1.0, 1.0);
    choose_now(KernelsChoice::Exactly(GPU8), false, Some((&fresh, &here)), &mut t).unwrap();
    choose_now(KernelsChoice::Auto, true, Some((&fresh, &here)), &mut t).unwrap();
    assert!(fresh.0.borrow().is_empty());
}

#[test]
fn a_new_build_of_the_kernels_forgets_and_a_remembered_profile_that_fails_is_timed_again() {
    let config = Config::from_json(
        r#"{"model_type":"gpt2","n_layer":2,"n_head":2,"n_embd":64,"n_positions":64,"vocab_size":100}"#,
    )
    .unwrap();
    assert_ne!(
        key("b1", "GPU", &config, Format::F32),
        key("b2", "GPU", &config, Format::F32),
        "the build is part of the key"
    );
    // The build's id changes with any kernel source.
    let sources = ["fn main() {}", "fn other() {}"];
    assert_ne!(id_of(sources.into_iter()), id_of(sources[..1].iter().copied()));
    assert_ne!(id_of(["ab", "c"].into_iter()), id_of(["a", "bc"].into_iter()));
    assert_eq!(build_id(), build_id());
    assert_eq!(build_id().len(), 16);
    // Remembered gpu-8 no longer opens: the candidates are timed again and the new winner kept.
    let store = Store::default();
    let here = key(&build_id(), "GPU", &config, Format::F32);
    store.set(&here, "gpu-8");
    let mut t = Table::new(&[
        (CPU, Ok(3.0)),
        (GPU2, Ok(1.0)),
        (GPU4, Ok(2.0)),
        (GPU8, Err("no longer compiles")),
    ]);
    let c = choose_now(KernelsChoice::Auto, false, Some((&store, &here)), &mut t).unwrap();
    assert_eq!((c.profile, c.reason), (GPU2, Reason::Timed));
    assert_eq!(t.runs, vec![(vec![GPU8], false), (vec![CPU, GPU2, GPU4, GPU8], true)]);
    assert_eq!(store.get(&here).as_deref(), Some("gpu-2"));
    // A remembered cpu profile is not taken for `gpu`: its layouts are timed.
    store.set(&here, "cpu");
    let mut t = times(0.5, 1.0, 2.0, 3.0);
    let c = choose_now(KernelsChoice::Gpu, false, Some((&store, &here)), &mut t).unwrap();
    assert_eq!((c.profile, c.reason), (GPU2, Reason::Timed));
}

#[test]
fn formats_with_more_weights_to_a_word_time_narrower_layouts() {
    // A word holds 4 (int8) or 8 (int4) weights: gpu-1 has as many
    // workgroups as f16's gpu-2 or more, and gpu-8 was the slowest on an H200.
    let gpu1 = Profile::Gpu(Split { wide: 1 });
    for format in [Format::Int8PerTensor, Format::Int8, Format::Int4] {
        let (profiles, reason) = candidates(KernelsChoice::Auto, false, format, None);
        assert_eq!((profiles, reason), (vec![CPU, gpu1, GPU2, GPU4], Reason::Timed));
    }
    for format in [Format::F32, Format::F16, Format::Bf16] {
        let (profiles, _) = candidates(KernelsChoice::Gpu, false, format, None);
        assert_eq!(profiles, vec![GPU2, GPU4, GPU8]);
    }
    // Remembered or asked for by name, a layout is taken in any format.
    let (profiles, _) = candidates(KernelsChoice::Auto, false, Format::Int4, Some(GPU8));
    assert_eq!(profiles, vec![GPU8]);
}
