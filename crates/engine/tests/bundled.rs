//! The bundled Shakespeare model (`www/models/shakespeare`), as shipped: it
//! loads, CPU and GPU engines agree on it, greedy generation from a fixed
//! prompt gives the committed text byte for byte, and a seeded sample is the
//! same twice. Expected text: `tests/fixtures/shakespeare_greedy.txt`
//! (regenerate with `decode-lab generate --model www/models/shakespeare
//! --prompt "ROMEO:" --temperature 0 --max-tokens 48 --backend cpu` after retraining).
#![cfg(not(target_arch = "wasm32"))] // native test: the browser loads it in tests/e2e

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{fixtures, gpu, gpu_model, rel_max_err, PROFILES};
use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::gpu::{GpuModel, GpuSession};
use decode_lab_engine::kernels::Profile;
use decode_lab_engine::model::{Model, Tokenizer};
use decode_lab_engine::run::{Job, Run};
use decode_lab_engine::sample::{explain, Settings};
use decode_lab_engine::{Session, Wanted};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare")
}

fn load() -> (Arc<Model>, Tokenizer) {
    let model = Model::from_dir(&dir()).expect("the bundled model loads");
    let bytes = std::fs::read(dir().join("tokenizer.json")).expect("tokenizer.json");
    (Arc::new(model), Tokenizer::from_bytes(&bytes).expect("the bundled tokenizer loads"))
}

fn text(
    session: Session,
    tokenizer: &Tokenizer,
    settings: Settings,
    seed: u64,
    n: usize,
) -> String {
    let mut out = String::new();
    pollster::block_on(async {
        let job = Job { settings, seed, stop: Vec::new(), max_tokens: n };
        let mut run = Run::start(session, tokenizer, "ROMEO:", &job).await.unwrap();
        loop {
            let step = run.step(tokenizer, None).await.unwrap();
            // The page shows this explanation instead of computing its own.
            let seen = &run.history()[..step.history_len];
            let want = explain(&step.logits, seen, &job.settings).unwrap();
            assert_eq!(*step.explanation, want, "a step keeps what it drew from");
            out += &step.text;
            if step.done.is_some() {
                break;
            }
        }
    });
    out
}

#[test]
fn greedy_text_is_the_committed_one() {
    let (model, tokenizer) = load();
    let greedy = Settings { temperature: 0.0, ..Settings::default() };
    let got = text(Session::Cpu(CpuSession::new(model)), &tokenizer, greedy, 0, 48);
    let want = std::fs::read_to_string(fixtures().join("shakespeare_greedy.txt")).unwrap();
    assert_eq!(got, want);
}

#[test]
fn seeded_sampling_repeats_and_reads_as_words() {
    let (model, tokenizer) = load();
    let s = Settings { temperature: 0.8, ..Settings::default() };
    let a = text(Session::Cpu(CpuSession::new(model.clone())), &tokenizer, s.clone(), 1, 40);
    let b = text(Session::Cpu(CpuSession::new(model)), &tokenizer, s, 1, 40);
    assert_eq!(a, b);
    // Whole English words as single tokens: what the distribution panel teaches with.
    for word in [" the", " my", " lord", ","] {
        assert_eq!(tokenizer.encode(word).unwrap().len(), 1, "{word:?} is one token");
    }
}

/// In both kernel profiles.
#[test]
fn gpu_and_cpu_agree_on_the_bundled_model() {
    let (model, tokenizer) = load();
    for (name, profile) in PROFILES {
        let Some(gpu_model) = gpu_model(&model, profile) else { return };
        let mut gpu = Session::Gpu(GpuSession::new(gpu_model).unwrap());
        let mut cpu = Session::Cpu(CpuSession::new(model.clone()));
        let prompt =
            tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?").unwrap();
        let g = pollster::block_on(gpu.prefill(&prompt, Wanted::All)).unwrap();
        let c = pollster::block_on(cpu.prefill(&prompt, Wanted::All)).unwrap();
        assert!(rel_max_err(&g, &c) <= 1e-4, "{name} prefill: {:e}", rel_max_err(&g, &c));
        let greedy = Settings { temperature: 0.0, ..Settings::default() };
        let gpu_text = text(gpu_session_fresh(&gpu), &tokenizer, greedy.clone(), 0, 48);
        let cpu_text = text(cpu, &tokenizer, greedy, 0, 48);
        assert_eq!(gpu_text, cpu_text, "{name}");
    }
}

fn gpu_session_fresh(s: &Session) -> Session {
    let mut fork = s.fork().unwrap();
    fork.rewind(0).unwrap();
    fork
}

/// A run that moves from the GPU to the CPU engine mid-way (what the page does
/// when the GPU device is lost) writes the text a run on the CPU alone writes,
/// seeded sampling included: the draw stream carries on where it was.
#[test]
fn a_run_switched_to_the_cpu_mid_way_continues_the_same_text() {
    let (model, tokenizer) = load();
    let Some(gpu_model) = gpu_model(&model, Profile::Cpu) else { return };
    let settings = Settings { temperature: 1.0, top_k: 40, ..Settings::default() };
    let job = Job { settings: settings.clone(), seed: 11, stop: Vec::new(), max_tokens: 40 };
    let want = text(Session::Cpu(CpuSession::new(model.clone())), &tokenizer, settings, 11, 40);
    let mut got = String::new();
    pollster::block_on(async {
        let gpu = Session::Gpu(GpuSession::new(gpu_model).unwrap());
        let mut run = Run::start(gpu, &tokenizer, "ROMEO:", &job).await.unwrap();
        for i in 0.. {
            if i == 15 {
                run.switch_session(Session::Cpu(CpuSession::new(model.clone()))).await.unwrap();
                assert_eq!(run.session().backend_name(), "cpu");
            }
            let step = run.step(&tokenizer, None).await.unwrap();
            got += &step.text;
            if step.done.is_some() {
                break;
            }
        }
    });
    assert_eq!(got, want);
}

/// The page's `?selftest=1` on the bundled model, in each kernel profile:
/// every kernel of the profile and 16 greedy model steps pass on this
/// adapter, and the report says so (and which kernels) in plain text.
#[test]
fn self_test_passes_on_the_bundled_model() {
    use decode_lab_engine::gpu::selftest;
    let (model, tokenizer) = load();
    for (_, profile) in PROFILES {
        let Some(gpu_model) = gpu_model(&model, profile) else { return };
        let prompt = tokenizer.encode("ROMEO:").unwrap();
        let report = pollster::block_on(selftest::run(gpu_model, &prompt, 16, None));
        assert!(report.passed(), "{}", report.text());
        assert_eq!(report.failure(), None);
        assert_eq!((report.model.steps, report.model.same_tokens), (16, 16));
        assert!(report.model.rel_err <= selftest::MODEL_REL_TOL);
        let text = report.text();
        assert!(text.starts_with("Decode Lab self-test: PASS\nadapter: "), "{text}");
        assert!(text.contains("maxStorageBufferBindingSize: "));
        assert!(text.contains(&format!("kernels: the {} profile", profile.name())), "{text}");
        let passes = text.lines().filter(|l| l.starts_with("  pass ")).count();
        assert_eq!(passes, report.kernels.len());
    }
}

/// The browser's CPU engine cuts a long prefill into chunks with a pause
/// between them (so the page is not frozen); the logits are the same bit for
/// bit as one pass, for every row and for the last one, and the KV cache too
/// (the decode step after it is the same).
#[test]
fn paused_cpu_prefill_equals_one_pass_bit_for_bit() {
    use std::cell::Cell;
    use std::rc::Rc;
    let (model, tokenizer) = load();
    let text = "To be, or not to be, that is the question. ".repeat(40);
    let tokens: Vec<u32> = tokenizer.encode(&text).unwrap().into_iter().take(200).collect();
    assert_eq!(tokens.len(), 200);
    let pauses = Rc::new(Cell::new(0));
    let counted = pauses.clone();
    let pause: decode_lab_engine::cpu::Pause = Rc::new(move || {
        counted.set(counted.get() + 1);
        Box::pin(async {})
    });
    for wanted in [Wanted::All, Wanted::Last] {
        pauses.set(0);
        let mut plain = Session::Cpu(CpuSession::new(model.clone()));
        let mut paused = Session::Cpu(CpuSession::new(model.clone()).with_pause(pause.clone()));
        let (a, b) = pollster::block_on(async {
            let a = plain.prefill(&tokens, wanted).await.unwrap();
            let b = paused.prefill(&tokens, wanted).await.unwrap();
            (a, b)
        });
        assert!(pauses.get() >= 10, "{} pauses", pauses.get());
        assert_eq!(a.len(), b.len());
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "{wanted:?}");
        assert_eq!((plain.pos(), paused.last_stats().tokens), (200, 200));
        let (a, b) = pollster::block_on(async {
            (plain.decode(5).await.unwrap(), paused.decode(5).await.unwrap())
        });
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        // An inspected prefill pauses the same way, and its residual stream
        // and attention weights are put together from the chunks row for row.
        pauses.set(0);
        let mut plain = Session::Cpu(CpuSession::new(model.clone()));
        let mut paused = Session::Cpu(CpuSession::new(model.clone()).with_pause(pause.clone()));
        let look = decode_lab_engine::Look { residuals: true, attention: true };
        let (a, b) = pollster::block_on(async {
            let a = plain.prefill_inspected(&tokens, wanted, look).await.unwrap();
            let b = paused.prefill_inspected(&tokens, wanted, look).await.unwrap();
            (a, b)
        });
        let (ra, rb) = (a.residuals.unwrap(), b.residuals.unwrap());
        let (aa, ab) = (a.attention.unwrap(), b.attention.unwrap());
        let (la, lb) = (a.logits, b.logits);
        assert!(
            aa.iter().zip(&ab).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{wanted:?}: attention"
        );
        assert!(pauses.get() >= 10, "{} pauses", pauses.get());
        assert_eq!(ra.len(), (model.config.n_layer + 1) * 200 * model.config.n_embd);
        assert!(ra.iter().zip(&rb).all(|(x, y)| x.to_bits() == y.to_bits()), "{wanted:?}");
        assert!(la.iter().zip(&lb).all(|(x, y)| x.to_bits() == y.to_bits()), "{wanted:?}");
        assert_eq!(paused.pos(), 200);
    }
}

/// The text a run writes from where it stands to its end.
async fn finish(run: &mut Run, tokenizer: &Tokenizer) -> String {
    let mut out = String::new();
    loop {
        let step = run.step(tokenizer, None).await.unwrap();
        out += &step.text;
        if step.done.is_some() {
            return out;
        }
    }
}

/// Generate again on the same prompt: the run restarts from its prompt's
/// prefill (the cache rewound to it, its logits used again) and writes what
/// a fresh run writes, seeded sampling included, on the CPU engine and on
/// the GPU; once a crop dropped the prompt from the cache, it cannot.
#[test]
fn a_restarted_run_writes_what_a_fresh_run_writes() {
    let (model, tokenizer) = load();
    let settings = Settings { temperature: 1.0, top_k: 40, ..Settings::default() };
    let job = |seed| Job { settings: settings.clone(), seed, stop: Vec::new(), max_tokens: 30 };
    for session in engines(&model) {
        let fresh = |seed| text(session(), &tokenizer, settings.clone(), seed, 30);
        pollster::block_on(async {
            let mut run = Run::start(session(), &tokenizer, "ROMEO:", &job(5)).await.unwrap();
            assert_eq!(finish(&mut run, &tokenizer).await, fresh(5));
            assert_eq!(run.restartable_prompt(), Some(&tokenizer.encode("ROMEO:").unwrap()[..]));
            assert!(run.restart(&job(6)).unwrap());
            assert_eq!(finish(&mut run, &tokenizer).await, fresh(6));
            assert!(run.restart(&job(5)).unwrap());
            assert_eq!(finish(&mut run, &tokenizer).await, fresh(5));
            // Past the context (256 positions): cropped, the prompt's cache is gone.
            let long = Job { max_tokens: 1000, ..job(5) };
            assert!(run.restart(&long).unwrap());
            let the = tokenizer.encode(" the").unwrap()[0];
            while run.context_len() < 256 {
                run.step(&tokenizer, Some(the)).await.unwrap();
            }
            assert!(run.step(&tokenizer, Some(the)).await.unwrap().crop.is_some());
            assert_eq!(run.restartable_prompt(), None);
            assert!(!run.restart(&job(5)).unwrap());
        });
    }
}

/// Chat's next turn: a run resumed on a prompt that begins with everything
/// its cache holds (the prompt and the reply, then a new turn) keeps that
/// cache and prefills only the new tokens; its logits are a fresh start's
/// (the CPU engine: the same bits and text; the GPU: within the model
/// tolerance), and it declines, changing nothing, where the prompt shares
/// nothing, outgrows the context or the cache may have evicted.
#[test]
fn a_resumed_run_prefills_only_what_its_cache_lacks() {
    use decode_lab_engine::kv_policy::KvPolicy;
    let (model, tokenizer) = load();
    let settings = Settings { temperature: 1.0, top_k: 40, ..Settings::default() };
    let job = |seed| Job { settings: settings.clone(), seed, stop: Vec::new(), max_tokens: 20 };
    for (e, session) in engines(&model).iter().enumerate() {
        pollster::block_on(async {
            let mut run = Run::start(session(), &tokenizer, "ROMEO:", &job(5)).await.unwrap();
            finish(&mut run, &tokenizer).await;
            let held = run.context_len();
            let next = [run.history(), &tokenizer.encode("\nJULIET:").unwrap()[..]].concat();
            assert!(held > 2 && next.len() > held);
            assert_eq!(run.resume(next.clone(), &job(7)).await.unwrap(), Some(held));
            assert_eq!(run.session().last_stats().tokens, next.len() - held);
            assert_eq!(
                (run.context_len(), run.restartable_prompt()),
                (next.len(), Some(&next[..]))
            );
            let mut fresh = Run::start_ids(session(), next.clone(), &job(7)).await.unwrap();
            if e == 0 {
                assert!(bits(run.logits()) == bits(fresh.logits()), "cpu: other logits");
                let (a, b) =
                    (finish(&mut run, &tokenizer).await, finish(&mut fresh, &tokenizer).await);
                assert_eq!(a, b, "cpu: the same text");
            } else {
                let err = rel_max_err(run.logits(), fresh.logits());
                assert!(err <= decode_lab_engine::gpu::selftest::MODEL_REL_TOL, "gpu: {err}");
            }
            // Declined, nothing changed: nothing shared; past the context (256); an evicting cache.
            let held = run.context_len();
            let other = tokenizer.encode("JULIET:").unwrap();
            assert_ne!(other[0], run.history()[0]);
            assert_eq!(run.resume(other, &job(7)).await.unwrap(), None);
            assert_eq!(run.resume(vec![next[0]; 257], &job(7)).await.unwrap(), None);
            assert_eq!(run.context_len(), held);
            let windowed = session().with_kv_policy(KvPolicy::Window { window: 64 }).unwrap();
            let mut run = Run::start_ids(windowed, next.clone(), &job(7)).await.unwrap();
            let longer = [&next[..], &next[..2]].concat();
            assert_eq!(run.resume(longer, &job(7)).await.unwrap(), None);
        });
    }
}

/// Fresh sessions of the CPU engine, then of the GPU's (where there is
/// one) in the cpu profile's kernels: a restart or a resume is the run's
/// logic, the same on any kernels.
fn engines(model: &Arc<Model>) -> Vec<Box<dyn Fn() -> Session>> {
    let cpu = model.clone();
    let mut engines: Vec<Box<dyn Fn() -> Session>> =
        vec![Box::new(move || Session::Cpu(CpuSession::new(cpu.clone())))];
    if let Some(gpu_model) = gpu_model(model, Profile::Cpu) {
        engines.push(Box::new(move || Session::Gpu(GpuSession::new(gpu_model.clone()).unwrap())));
    }
    engines
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Weights in the CPU engine's layout (`Weights::use_cpu_layout`: lifted,
/// the blocks in panels) are not f16 words a GPU kernel can read: the GPU
/// engine says so instead of computing nonsense.
#[test]
fn the_gpu_refuses_weights_laid_out_for_the_cpu_engine() {
    use decode_lab_engine::model::{LayerWeights, WeightsChoice};
    use decode_lab_engine::storage::format::Format;
    let Some((ctx, _)) = gpu() else { return };
    let config = std::fs::read_to_string(dir().join("config.json")).unwrap();
    let file = std::fs::read(dir().join("model.safetensors")).unwrap();
    let choice = WeightsChoice::Exactly(Format::F16);
    let mut model = Model::from_bytes_as(&config, &file, choice).unwrap();
    model.weights.use_cpu_layout();
    assert!(model.weights.matrices().all(|m| m.is_lifted()));
    let in_panels = |l: &LayerWeights| l.matrices().iter().all(|m| m.f16_panels().is_some());
    assert!(model.weights.layers.iter().all(in_panels), "the blocks are in panels");
    match pollster::block_on(GpuModel::new(ctx.clone(), Arc::new(model), Profile::Cpu)) {
        Ok(_) => panic!("a model laid out for the CPU went to the GPU"),
        Err(e) => assert!(e.to_string().contains("laid out for the CPU engine"), "{e}"),
    }
    // An f32 head in row panels (the CPU layout's), the blocks row-major:
    // refused too.
    let choice = WeightsChoice::Exactly(Format::F32);
    let mut model = Model::from_bytes_as(&config, &file, choice).unwrap();
    let w = &mut model.weights;
    assert!(w.lm_head.as_mut().unwrap_or(&mut w.wte).into_row_panels());
    match pollster::block_on(GpuModel::new(ctx.clone(), Arc::new(model), Profile::Cpu)) {
        Ok(_) => panic!("an f32 head in row panels went to the GPU"),
        Err(e) => assert!(e.to_string().contains("laid out for the CPU engine"), "{e}"),
    }
    // int8 weights for the CPU engine's 8-bit activations: refused too.
    let choice = WeightsChoice::Exactly(Format::Int8);
    let mut model = Model::from_bytes_as(&config, &file, choice).unwrap();
    assert!(model.weights.use_int8_activations());
    match pollster::block_on(GpuModel::new(ctx.clone(), Arc::new(model), Profile::Cpu)) {
        Ok(_) => panic!("int8 weights for 8-bit activations went to the GPU"),
        Err(e) => assert!(e.to_string().contains("8-bit activations"), "{e}"),
    }
}
