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
use decode_lab_engine::fast::coworker::{self as hook, Coworker};
use decode_lab_engine::model::{Model, Variant, WeightsChoice};
use decode_lab_engine::storage::format::Format;
use decode_lab_engine::Wanted;
use pollster::block_on;

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
    let file = common::random_safetensors(&shapes, 0.05);
    let config = format!(
        r#"{{"model_type": "gpt2", "n_layer": {n_layer}, "n_head": 8, "n_embd": {e}, "n_positions": {n_pos}, "vocab_size": {vocab}, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "tie_word_embeddings": {}}}"#,
        !untied
    );
    Arc::new(Model::from_bytes_as(&config, &file, WeightsChoice::Exactly(held)).unwrap())
}

/// `model` in the CPU worker's layout (`remote::cpu_model`: with 8-bit
/// activations when `acts8`, the int8 and int4 matrices in quad or oct
/// panels and the LM head in head panels; then `Weights::use_cpu_layout`:
/// lifted, the blocks' f16 matrices in panels), which the coworker's parts
/// are cut from.
fn in_cpu_layout(model: Arc<Model>, acts8: bool) -> Arc<Model> {
    let mut model = Arc::unwrap_or_clone(model);
    assert!(!acts8 || model.weights.use_int8_activations());
    model.weights.use_cpu_layout();
    Arc::new(model)
}

/// The worker's request for a fresh session `id` on `model` in `format`.
fn open(model: &Model, id: u32, format: Format) -> decode_lab_engine::remote::wire::Request {
    decode_lab_engine::remote::wire::Request::Open {
        id,
        format: format.name().into(),
        int8_activations: false,
        policy: "full".into(),
        groups: model.config.n_head,
        layers: model.config.n_layer,
    }
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
    let inner = ThreadCoworker::spawn(model.clone()).unwrap();
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
    let mut models = vec![
        ("f16".to_string(), model(2, false, Format::F16)),
        ("untied f16".to_string(), model(1, true, Format::F16)),
    ];
    for format in Format::ALL {
        let name = format.name();
        models.push((format!("{name} as stored"), model(1, false, format)));
        models.push((
            format!("{name} in the CPU layout"),
            in_cpu_layout(model(2, false, format), false),
        ));
        if format.takes_int8_activations() {
            for untied in [false, true] {
                let m = in_cpu_layout(model(1, untied, format), true);
                models.push((format!("{name} × 8-bit activations, untied {untied}"), m));
            }
        }
    }
    let f16 = models.iter().find(|(name, _)| name == "f16 in the CPU layout").unwrap();
    assert!(f16.1.weights.layers[0].c_fc_weight.f16_panels().is_some(), "f16 panels are cut");
    // Each side reads its part of column panels and head rows from its model
    // itself; halves of row-major rows are copies of their own, and so is
    // every part of a variant the coworker drops.
    for (name, model) in &models {
        let blocks = model.weights.layers.iter().flat_map(|l| l.matrices());
        let in_panels = blocks.clone().all(|m| m.panel_major());
        for side in [Side::Mine, Side::Theirs] {
            let copied = Panels::new(model, side).unwrap().copied_bytes();
            assert_eq!(copied == 0, in_panels, "{name} {side:?}: {copied} bytes copied");
        }
        let half = blocks.map(|m| m.bytes()).sum::<u64>() / 2;
        let variant = Panels::copied(model, Side::Theirs).unwrap().copied_bytes();
        assert!(variant > half, "{name}: a variant's part holds {variant} bytes");
    }
    for (name, model) in models {
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
fn only_big_products_are_shared_and_the_refusals_say_why() {
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

/// The CPU worker's host times its first decode steps with and without its
/// coworker, alternating (the steps' stats say which way each ran), then
/// keeps one way (`remote::pace`); the logits are those of one thread alone
/// bit for bit all along.
#[test]
fn the_worker_tries_its_coworker_then_keeps_the_faster_way_with_the_same_logits() {
    use decode_lab_engine::remote::pace::{TRIALS, WARM_UP};
    use decode_lab_engine::remote::wire::{Reply, Request};
    let trial = 2 * (WARM_UP + TRIALS); // decode steps alternating
    use decode_lab_engine::remote::Host;
    let model = model(2, false, Format::F32);
    let steps = |host: &mut Host| -> Vec<(Vec<u32>, bool)> {
        host.handle(open(&model, 1, model.format()));
        let prefill = Request::Prefill {
            id: 1,
            tokens: vec![5, 9, 1],
            wanted: Wanted::Last,
            look: Default::default(),
        };
        host.handle(prefill).unwrap();
        (0..trial + 4)
            .map(|i| {
                let answer = host.handle(Request::Decode { id: 1, token: i as u32 * 31 }).unwrap();
                let Reply::Logits { stats } = answer.reply else { panic!("{:?}", answer.reply) };
                (bits(&answer.floats), stats.coworker)
            })
            .collect()
    };
    let alone = steps(&mut Host::new(model.clone()));
    let inner = ThreadCoworker::spawn(model.clone()).unwrap();
    coworker::install(&model, Box::new(inner)).unwrap();
    let paced = steps(&mut Host::new(model.clone()));
    hook::uninstall();
    for (i, ((a, was_with), (p, with))) in alone.iter().zip(&paced).enumerate() {
        assert_eq!(a, p, "decode step {i}: the same logits");
        assert!(!was_with, "no coworker, none used");
        if i < trial {
            assert_eq!(*with, i % 2 == 0, "step {i} of the trial");
        }
    }
    let kept: Vec<bool> = paced[trial..].iter().map(|(_, with)| *with).collect();
    assert!(kept.iter().all(|w| *w == kept[0]), "one way kept after the trial: {kept:?}");
}

/// What the timing lessons do before they time (`Request::Settle`): the
/// worker runs the trial on a scratch session, so every step the page times
/// afterwards — from the very first — runs the way it chose; without a
/// coworker there is nothing to choose.
#[test]
fn settling_makes_every_later_step_run_the_chosen_way() {
    use decode_lab_engine::remote::wire::{Reply, Request};
    use decode_lab_engine::remote::Host;
    let model = in_cpu_layout(model(1, false, Format::F16), false);
    let settle = |host: &mut Host| match host.handle(Request::Settle).unwrap().reply {
        Reply::Settled { coworker } => coworker,
        other => panic!("{other:?}"),
    };
    assert_eq!(settle(&mut Host::new(model.clone())), None, "no coworker: nothing to choose");
    let inner = ThreadCoworker::spawn(model.clone()).unwrap();
    coworker::install(&model, Box::new(inner)).unwrap();
    let mut host = Host::new(model.clone());
    let chosen = settle(&mut host).expect("a coworker: a choice");
    host.handle(open(&model, 1, model.format()));
    let ways: Vec<bool> = (0..6)
        .map(|t| {
            let answer = host.handle(Request::Decode { id: 1, token: t }).unwrap();
            let Reply::Logits { stats } = answer.reply else { panic!("{:?}", answer.reply) };
            stats.coworker
        })
        .collect();
    // Another format of the model (the quantization lesson's): the coworker
    // made it too, and its steps run the chosen way as well.
    host.handle(open(&model, 2, Format::F32));
    let answer = host.handle(Request::Decode { id: 2, token: 1 }).unwrap();
    let Reply::Logits { stats } = answer.reply else { panic!("{:?}", answer.reply) };
    hook::uninstall();
    assert_eq!(ways, vec![chosen; 6], "every step after settling ran the chosen way");
    assert_eq!(stats.coworker, chosen, "a variant's step ran the chosen way too");
}

/// The worker's variants of its loaded model (the quantization lesson's
/// formats, with 8-bit activations or not; pooled K/V heads; the first
/// blocks only): the coworker makes each from its own copy of the loaded
/// model, so their big products are shared too, and the logits are those of
/// the variant on one thread alone bit for bit. A variant neither side can
/// make (8-bit activations for f16 weights) leaves the next ones' jobs in step.
#[test]
fn the_coworker_makes_each_variant_too_and_shares_its_products() {
    let model = in_cpu_layout(model(2, false, Format::F16), false);
    let mut variants = Vec::new();
    for format in Format::ALL {
        variants.push(Variant { format, int8_activations: false, groups: 8, layers: 2 });
        if format.takes_int8_activations() {
            variants.push(Variant { format, int8_activations: true, groups: 8, layers: 2 });
        }
    }
    variants
        .insert(2, Variant { format: Format::F16, int8_activations: true, groups: 8, layers: 2 });
    variants.push(Variant { format: Format::Int4, int8_activations: false, groups: 2, layers: 2 });
    variants.push(Variant { format: Format::Int8, int8_activations: true, groups: 8, layers: 1 });
    let alone: Vec<_> =
        variants.iter().map(|v| v.make(&model).map(|m| run(&Arc::new(m)))).collect();
    coworker::install(&model, Box::new(ThreadCoworker::spawn(model.clone()).unwrap())).unwrap();
    let made: Vec<_> = variants.iter().map(|v| coworker::make_variant(&model, v)).collect();
    for ((v, made), alone) in variants.iter().zip(made).zip(alone) {
        let Ok(made) = made else {
            assert!(alone.is_err() && v.int8_activations, "{v:?}: made alone, not with a coworker");
            continue;
        };
        let made = Arc::new(made);
        let before = hook::shared();
        assert_eq!(run(&made), alone.unwrap(), "{v:?}: the same logits bit for bit");
        // As in the first test: the 5-token prefill and the 6 steps share
        // every big product, the 70-row prefill its LM head. (Pooled K/V
        // heads narrow the QKV matrix to 512 × 768, under `MIN_SHARED`.)
        let per_pass = match v.groups < 8 {
            true => 2 * made.config.n_layer + 1,
            false => jobs_per_pass(&made),
        };
        let shared = hook::shared() - before;
        assert_eq!(shared as usize, 7 * per_pass + 1, "{v:?}: products shared");
    }
    assert!(hook::installed(), "the coworker never failed");
    hook::uninstall();
}
