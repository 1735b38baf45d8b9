//! A coworker sharing the big products (`cpu::coworker`; in the browser a
//! second CPU worker) changes no number: prefills and decode steps with one
//! installed give the logits of one thread alone bit for bit, with every
//! block's four matmuls and the LM head handed to it; a coworker that fails
//! is dropped and its part computed here, still the same logits.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use common::fixtures;
use decode_lab_engine::cpu::coworker::{self, Panels, Side, ThreadCoworker};
use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::kernels::coworker::{self as hook, Coworker};
use decode_lab_engine::kernels::format::Format;
use decode_lab_engine::model::Model;
use decode_lab_engine::Wanted;
use pollster::block_on;

fn bundled() -> Arc<Model> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    Arc::new(Model::from_dir(&dir).expect("the bundled model loads"))
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Counts the jobs it is given and, from the `fail_at`-th on, fails them.
struct Counting {
    inner: ThreadCoworker,
    started: Rc<Cell<usize>>,
    fail_at: usize,
}

impl Coworker for Counting {
    fn start(&mut self, job: usize, x: &[f32]) -> bool {
        self.started.set(self.started.get() + 1);
        self.inner.start(job, x)
    }

    fn finish(&mut self, out: &mut [f32]) -> bool {
        let ok = self.inner.finish(out);
        ok && self.started.get() < self.fail_at
    }
}

/// Logits of a 5-token prefill (every row's), a 70-token one (more rows
/// than a job takes) and 6 decode steps, on one session.
fn run(model: &Arc<Model>) -> Vec<Vec<u32>> {
    let vocab = model.config.vocab_size as u32;
    let mut s = CpuSession::new(model.clone());
    let prompt = [5, 9, 1, 300, 7].map(|t| t % vocab);
    let mut out = vec![bits(&block_on(s.prefill(&prompt, Wanted::All)).unwrap())];
    let long: Vec<u32> = (0..70).map(|i| i * 37 % vocab).collect();
    out.push(bits(&block_on(s.prefill(&long, Wanted::Last)).unwrap()));
    for t in [11, 12, 13, 1999, 0, 42] {
        out.push(bits(&s.forward(&[t % vocab], Wanted::Last).unwrap()));
    }
    out
}

fn with_coworker(model: &Arc<Model>, fail_at: usize) -> (Vec<Vec<u32>>, usize, bool) {
    let started = Rc::new(Cell::new(0));
    let inner = ThreadCoworker::spawn(Panels::new(model, Side::Theirs).unwrap());
    let counting = Counting { inner, started: started.clone(), fail_at };
    coworker::install(model, Box::new(counting)).unwrap();
    let out = run(model);
    let still = hook::installed();
    hook::uninstall();
    (out, started.get(), still)
}

#[test]
fn a_coworker_changes_no_logit_and_takes_every_big_product() {
    let untied = Arc::new(Model::from_dir(&fixtures().join("golden/untied_f16")).unwrap());
    let f32_bundled = Arc::new(bundled().to_format(Format::F32).unwrap());
    for (name, model) in
        [("bundled f16", bundled()), ("bundled f32", f32_bundled), ("untied", untied)]
    {
        let alone = run(&model);
        let (shared, started, still) = with_coworker(&model, usize::MAX);
        assert_eq!(shared, alone, "{name}: the same logits bit for bit");
        assert!(still, "{name}: the coworker stayed installed");
        // The 5-token prefill and the 6 steps share every product; the
        // 70-row prefill (over ROWS_MAX) only its LM head (one wanted row).
        let per_pass = 4 * model.config.n_layer + 1;
        assert_eq!(started, 7 * per_pass + 1, "{name}: jobs handed over");
    }
}

#[test]
fn a_failing_coworker_is_dropped_and_its_part_computed_here() {
    let model = bundled();
    let alone = run(&model);
    let (shared, started, still) = with_coworker(&model, 10);
    assert_eq!(shared, alone, "the same logits bit for bit");
    assert!(!still, "the failed coworker was uninstalled");
    assert_eq!(started, 10, "no job after the failure");
}

#[test]
fn panels_need_f32_or_f16_and_say_so() {
    let int8 = bundled().to_format(Format::Int8).unwrap();
    let e = Panels::new(&int8, Side::Theirs).err().expect("int8 is not split into panels");
    assert!(e.to_string().contains("int8"), "{e}");
    let (x, out) = coworker::buffer_floats(&bundled()).unwrap();
    // 64 rows of the widest input (c_fc's 1,024 hidden) and of the widest
    // part (the LM head's second 1,024 vocabulary rows).
    assert_eq!((x, out), (64 * 1024, 64 * 1024));
}
