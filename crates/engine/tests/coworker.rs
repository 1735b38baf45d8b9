//! A coworker sharing the big products (`cpu::coworker`; in the browser a
//! second CPU worker) changes no number: prefills and decode steps with one
//! installed give the logits of one thread alone bit for bit, with every
//! block's four matmuls and the LM head handed to it; a coworker that fails
//! is dropped and its part computed here, still the same logits.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use decode_lab_engine::cpu::coworker::{self, Panels, Side, ThreadCoworker, MIN_SHARED};
use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::kernels::coworker::{self as hook, Coworker};
use decode_lab_engine::kernels::format::Format;
use decode_lab_engine::model::{Model, WeightsChoice};
use decode_lab_engine::Wanted;
use pollster::block_on;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// A seeded random GPT-2 (f32 file) with `n_embd` 512, so that its QKV and
/// MLP matrices and LM head (512 × 1,536, 512 × 2,048, 2,048 × 512) are
/// shared and its attention projection (512 × 512) is not; `untied`: an LM
/// head of its own.
fn model(n_layer: usize, untied: bool, held: Format) -> Arc<Model> {
    let (e, vocab, n_pos) = (512, 2048, 128);
    let mut shapes = common::gpt2_shapes(n_layer, e, vocab, n_pos);
    if untied {
        shapes.push(("lm_head.weight".into(), vec![vocab, e]));
    }
    let data: Vec<Vec<u8>> = shapes
        .iter()
        .enumerate()
        .map(|(i, (_, shape))| {
            let scale = if shape.len() == 1 { 1.0 } else { 0.05 };
            let v: Vec<f32> =
                cases::random(shape.iter().product(), i as u64).iter().map(|x| x * scale).collect();
            bytemuck::cast_slice(&v).to_vec()
        })
        .collect();
    let views = shapes.iter().zip(&data).map(|((name, shape), bytes)| {
        (name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes).unwrap())
    });
    let file = safetensors::serialize(views, None).unwrap();
    let config = format!(
        r#"{{"model_type": "gpt2", "n_layer": {n_layer}, "n_head": 8, "n_embd": {e}, "n_positions": {n_pos}, "vocab_size": {vocab}, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "tie_word_embeddings": {}}}"#,
        !untied
    );
    Arc::new(Model::from_bytes_as(&config, &file, WeightsChoice::Exactly(held)).unwrap())
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

/// Jobs per pass of a model from [`model`]: each block's QKV and two MLP
/// matrices, and the LM head.
fn jobs_per_pass(model: &Model) -> usize {
    3 * model.config.n_layer + 1
}

#[test]
fn a_coworker_changes_no_logit_and_takes_every_big_product() {
    for (name, model) in [
        ("f16", model(2, false, Format::F16)),
        ("f32", model(2, false, Format::F32)),
        ("untied f16", model(1, true, Format::F16)),
    ] {
        let alone = run(&model);
        let (shared, started, still) = with_coworker(&model, usize::MAX);
        assert_eq!(shared, alone, "{name}: the same logits bit for bit");
        assert!(still, "{name}: the coworker stayed installed");
        // The 5-token prefill and the 6 steps share every big product; the
        // 70-row prefill (over ROWS_MAX) only its LM head (one wanted row).
        assert_eq!(started, 7 * jobs_per_pass(&model) + 1, "{name}: jobs handed over");
    }
}

#[test]
fn a_failing_coworker_is_dropped_and_its_part_computed_here() {
    let model = model(2, false, Format::F16);
    let alone = run(&model);
    let (shared, started, still) = with_coworker(&model, 3);
    assert_eq!(shared, alone, "the same logits bit for bit");
    assert!(!still, "the failed coworker was uninstalled");
    assert_eq!(started, 3, "no job after the failure");
}

#[test]
fn only_big_f32_and_f16_products_are_shared_and_the_refusals_say_why() {
    let int8 = model(1, false, Format::Int8);
    let e = Panels::new(&int8, Side::Theirs).err().expect("int8 is not cut into panels");
    assert!(e.to_string().contains("int8"), "{e}");
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare");
    let bundled = Model::from_dir(&dir).unwrap();
    let e = coworker::buffer_floats(&bundled).expect_err("the bundled model is not shared");
    assert!(e.to_string().contains("small"), "{e}");
    assert!(bundled.weights.matrices().all(|m| m.rows * m.cols <= MIN_SHARED));
    // 64 rows of the widest input (mlp.c_proj's 2,048) and of the widest part
    // (c_fc's and the LM head's second 1,024 outputs).
    assert_eq!(
        coworker::buffer_floats(&model(1, false, Format::F16)).unwrap(),
        (64 * 2048, 64 * 1024)
    );
}
