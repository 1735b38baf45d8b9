//! The CPU engine behind the worker boundary (`engine::remote`): a remote
//! session, reached through JSON headers and float payloads as the page's
//! Web Worker is, gives the in-thread CPU engine's numbers bit for bit —
//! prefill, decode, rewind, fork, copy, batches, inspected prefills, a seeded
//! run's text, a beam search — and its errors are the CPU engine's errors.
#![cfg(not(target_arch = "wasm32"))] // native test

mod common;

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use common::bytes;
use decode_lab_engine::beam::{BeamSearch, BeamSettings, Scoring};
use decode_lab_engine::cpu::CpuSession;
use decode_lab_engine::model::{Model, Tokenizer};
use decode_lab_engine::remote::wire::{self, Reply, Request};
use decode_lab_engine::remote::{Host, Link, Loopback, RemoteModel};
use decode_lab_engine::run::{Job, Run};
use decode_lab_engine::sample::Settings;
use decode_lab_engine::storage::format::Format;
use decode_lab_engine::storage::matrix::Matrix;
use decode_lab_engine::{Batch, Look, Session, Wanted};
use pollster::block_on;

fn bundled() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../www/models/shakespeare")
}

/// The bundled model, loaded as the page loads it, and a worker host that
/// loaded the same files itself (as the page's worker does).
fn both() -> (Arc<Model>, Rc<Loopback>, Rc<RemoteModel>) {
    let dir = bundled();
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let file = std::fs::read(dir.join("model.safetensors")).unwrap();
    let model = Arc::new(Model::from_bytes(&config, &file).unwrap());
    let host = Host::load(&config, &file, model.format()).unwrap();
    let link = Rc::new(Loopback::new(host));
    let remote = RemoteModel::new(link.clone() as Rc<dyn Link>, &model);
    (model, link, remote)
}

fn prompt() -> Vec<u32> {
    (0..13).map(|j| (j * 389 + 11) % 2000).collect()
}

#[test]
fn a_remote_session_gives_the_cpu_engines_logits_bit_for_bit() {
    let (model, _, remote) = both();
    let mut cpu = Session::Cpu(CpuSession::new(model));
    let mut far = Session::Remote(remote.session());
    let p = prompt();
    let (a, b) = block_on(async {
        (cpu.prefill(&p, Wanted::All).await.unwrap(), far.prefill(&p, Wanted::All).await.unwrap())
    });
    assert_eq!(bytes(&a), bytes(&b), "prefill, every row");
    for t in [5u32, 17, 900, 3] {
        let (a, b) =
            block_on(async { (cpu.decode(t).await.unwrap(), far.decode(t).await.unwrap()) });
        assert_eq!(bytes(&a), bytes(&b), "decode {t}");
    }
    assert_eq!(cpu.pos(), far.pos());
    // Rewind, fork and copy: the worker's caches follow the page's positions.
    cpu.rewind(9).unwrap();
    far.rewind(9).unwrap();
    let (mut cpu_fork, mut far_fork) = (cpu.fork().unwrap(), far.fork().unwrap());
    let (a, b) = block_on(async { (cpu.decode(42).await.unwrap(), far.decode(42).await.unwrap()) });
    assert_eq!(bytes(&a), bytes(&b), "decode after a rewind");
    let (a, b) =
        block_on(async { (cpu_fork.decode(7).await.unwrap(), far_fork.decode(7).await.unwrap()) });
    assert_eq!(bytes(&a), bytes(&b), "a fork decodes from the rewound position");
    assert_eq!(cpu_fork.copy_from(&cpu).unwrap(), far_fork.copy_from(&far).unwrap());
    let (a, b) =
        block_on(async { (cpu_fork.decode(8).await.unwrap(), far_fork.decode(8).await.unwrap()) });
    assert_eq!(bytes(&a), bytes(&b), "after copying the other session's cache");
    // The worker's cache, read across the wire, holds what the page's does.
    let (cpu_kv, far_kv) = block_on(async { (cpu.kv_bytes().await, far.kv_bytes().await) });
    assert_eq!((far_kv.unwrap(), far.weights()), (cpu_kv.unwrap(), cpu.weights()));
    assert!(far.last_stats().wall_ms > 0.0 && far.last_stats().tokens == 1);
}

#[test]
fn inspected_prefills_and_batches_cross_whole() {
    let (model, _, remote) = both();
    let look = Look { residuals: true, attention: true };
    let mut cpu = Session::Cpu(CpuSession::new(model.clone()));
    let mut far = Session::Remote(remote.session());
    let p = prompt();
    let (a, b) = block_on(async {
        let a = cpu.prefill_inspected(&p, Wanted::Last, look).await.unwrap();
        (a, far.prefill_inspected(&p, Wanted::Last, look).await.unwrap())
    });
    assert_eq!(a, b, "logits, residuals and attention weights");
    assert!(b.residuals.is_some() && b.attention.is_some());
    // A batch of three at different positions, one sitting a step out.
    let open = |cpu: bool| -> Vec<Session> {
        (0..3)
            .map(|_| match cpu {
                true => Session::Cpu(CpuSession::new(model.clone())),
                false => Session::Remote(remote.session()),
            })
            .collect()
    };
    let (mut a, mut b) = (Batch::new(open(true)).unwrap(), Batch::new(open(false)).unwrap());
    for i in 0..3 {
        let p = &prompt()[..3 + 4 * i];
        block_on(async {
            let x = a.prefill(i, p, Wanted::Last).await.unwrap();
            assert_eq!(bytes(&x), bytes(&b.prefill(i, p, Wanted::Last).await.unwrap()));
        });
    }
    for step in 0..4u32 {
        let tokens = [Some(step), (step % 2 == 0).then_some(step + 100), Some(7)];
        let (x, y) = block_on(async {
            (a.decode(&tokens).await.unwrap(), b.decode(&tokens).await.unwrap())
        });
        assert_eq!(bytes(&x), bytes(&y), "batched step {step}");
    }
    let pos = |b: &Batch| b.sessions().iter().map(Session::pos).collect::<Vec<_>>();
    assert_eq!(pos(&a), pos(&b));
    assert!(
        Batch::new(vec![Session::Cpu(CpuSession::new(model)), Session::Remote(remote.session())])
            .is_err(),
        "one batch, one engine"
    );
}

#[test]
fn a_seeded_run_and_a_beam_search_in_the_worker_write_the_same_text() {
    let (model, _, remote) = both();
    let tokenizer = Tokenizer::from_dir(&bundled()).unwrap();
    let job = Job { settings: Settings::default(), seed: 11, stop: Vec::new(), max_tokens: 24 };
    let text = |session: Session| {
        block_on(async {
            let mut run = Run::start(session, &tokenizer, "ROMEO.\n", &job).await.unwrap();
            let mut out = String::new();
            for _ in 0..job.max_tokens {
                let step = run.step(&tokenizer, None).await.unwrap();
                out += &step.text;
                if step.done.is_some() {
                    break;
                }
            }
            out
        })
    };
    let here = text(Session::Cpu(CpuSession::new(model.clone())));
    assert_eq!(here, text(Session::Remote(remote.session())));
    assert!(here.len() > 10, "{here:?}");
    let ids = tokenizer.encode("ROMEO.\n").unwrap();
    let ends: Vec<u32> = model.config.eos_token_id.into_iter().collect();
    let settings = BeamSettings { width: 3, max_new_tokens: 8, scoring: Scoring::DEFAULT, ends };
    let beams = |session: Session| {
        let mut search = block_on(BeamSearch::start(session, &ids, settings.clone())).unwrap();
        while block_on(search.step()).unwrap() {}
        search.beams().to_vec()
    };
    assert_eq!(
        beams(Session::Cpu(CpuSession::new(model))),
        beams(Session::Remote(remote.session()))
    );
}

#[test]
fn the_quantization_lessons_variants_run_in_the_worker_with_the_pages_weights() {
    let (model, _, remote) = both();
    for format in [Format::Int8, Format::Int4, Format::F32] {
        // The page's variant of its model, and the worker's of its own copy.
        let variant = Arc::new(model.to_format(format).unwrap());
        let far_model = remote.variant(&variant);
        let mut far = Session::Remote(far_model.session());
        let mut cpu = Session::Cpu(CpuSession::new(variant.clone()));
        let p = prompt();
        let (a, b) = block_on(async {
            (
                cpu.prefill(&p, Wanted::All).await.unwrap(),
                far.prefill(&p, Wanted::All).await.unwrap(),
            )
        });
        assert_eq!(bytes(&a), bytes(&b), "{format:?}");
        assert_eq!(far.weights(), cpu.weights());
        // Sessions of two formats share no cache.
        let Session::Remote(ref mut f) = far else { unreachable!() };
        assert!(f.copy_from(&remote.session()).is_err());
    }
}

#[test]
fn the_lessons_8_bit_activation_variants_run_in_the_worker_bit_for_bit() {
    let (model, _, remote) = both();
    for format in [Format::Int8PerTensor, Format::Int8, Format::Int4] {
        // The page's variant, laid out for 8-bit activations as the CLI's
        // `--activations int8`, and the worker's of its own copy.
        let mut variant = model.to_format(format).unwrap();
        assert!(variant.weights.use_int8_activations());
        variant.weights.use_cpu_layout();
        let variant = Arc::new(variant);
        let mut far = Session::Remote(remote.variant(&variant).session());
        let mut cpu = Session::Cpu(CpuSession::new(variant.clone()));
        let plain = Arc::new(model.to_format(format).unwrap());
        let mut f32_acts = Session::Cpu(CpuSession::new(plain));
        let p = prompt();
        let (a, b, c) = block_on(async {
            (
                cpu.prefill(&p, Wanted::All).await.unwrap(),
                far.prefill(&p, Wanted::All).await.unwrap(),
                f32_acts.prefill(&p, Wanted::All).await.unwrap(),
            )
        });
        assert_eq!(bytes(&a), bytes(&b), "{format:?}, prefill");
        assert_ne!(bytes(&a), bytes(&c), "{format:?}: other numbers than f32 activations'");
        let (a, b) =
            block_on(async { (cpu.decode(7).await.unwrap(), far.decode(7).await.unwrap()) });
        assert_eq!(bytes(&a), bytes(&b), "{format:?}, decode");
    }
}

#[test]
fn errors_in_the_worker_are_the_cpu_engines_errors() {
    let (model, link, remote) = both();
    let mut cpu = Session::Cpu(CpuSession::new(model.clone()));
    let mut far = Session::Remote(remote.session());
    let err = |r: decode_lab_engine::Result<Vec<f32>>| r.unwrap_err().to_string();
    block_on(async {
        assert_eq!(
            err(far.prefill(&[], Wanted::Last).await),
            err(cpu.prefill(&[], Wanted::Last).await)
        );
        let big = [model.config.vocab_size as u32 + 5];
        assert_eq!(
            err(far.prefill(&big, Wanted::Last).await),
            err(cpu.prefill(&big, Wanted::Last).await)
        );
        let long = vec![1u32; model.config.n_positions + 1];
        assert_eq!(
            err(far.prefill(&long, Wanted::Last).await),
            err(cpu.prefill(&long, Wanted::Last).await)
        );
    });
    assert_eq!(far.pos(), 0, "a failed pass moves nothing");
    assert_eq!(far.rewind(3).unwrap_err().to_string(), cpu.rewind(3).unwrap_err().to_string());
    let sent = link.sent.borrow().len();
    drop(far);
    assert!(link.sent.borrow()[sent].contains("Close"), "a dropped session frees its cache");
}

#[test]
fn an_unawaited_request_that_failed_answers_the_sessions_next_request() {
    let (model, _, _) = both();
    let mut host = Host::new(model.clone());
    let answer = |host: &mut Host, r: Request| host.handle(r).map(|a| a.reply);
    let open = |id, format: &str| Request::Open {
        id,
        format: format.to_string(),
        int8_activations: false,
        policy: "full".into(),
        groups: model.config.n_head,
        layers: model.config.n_layer,
    };
    assert_eq!(answer(&mut host, open(1, model.format().name())), None);
    // A format the worker does not know: the session's first request says so.
    assert_eq!(answer(&mut host, open(2, "int3")), None);
    match answer(&mut host, Request::Decode { id: 2, token: 3 }) {
        Some(Reply::Failed { message }) => assert!(message.contains("int3"), "{message}"),
        other => panic!("{other:?}"),
    }
    // Session 1 copies a session that does not exist: nobody awaits it.
    assert_eq!(answer(&mut host, Request::Copy { id: 1, from: 99 }), None);
    let decode = Request::Decode { id: 1, token: 3 };
    match answer(&mut host, decode.clone()) {
        Some(Reply::Failed { message }) => assert!(message.contains("no session 99"), "{message}"),
        other => panic!("the copy's error should come first: {other:?}"),
    }
    // Told once; the session then works.
    assert!(matches!(answer(&mut host, decode), Some(Reply::Logits { .. })));
    // 8-bit activations for weights they do not multiply (bf16), or for
    // the loaded weights themselves (already in the CPU layout): said.
    for (id, format) in [(3, "bf16"), (4, model.format().name())] {
        let acts8 = match open(id, format) {
            Request::Open { id, format, policy, groups, layers, .. } => {
                Request::Open { id, format, int8_activations: true, policy, groups, layers }
            }
            _ => unreachable!("an Open"),
        };
        assert_eq!(answer(&mut host, acts8), None);
        match answer(&mut host, Request::Decode { id, token: 3 }) {
            Some(Reply::Failed { message }) => {
                assert!(message.contains("8-bit activations"), "{format}: {message}")
            }
            other => panic!("{format}: {other:?}"),
        }
    }
    // A batch naming one session twice is refused and loses no session.
    let twice = Request::Batch { ids: vec![1, 1], tokens: vec![Some(1), Some(2)] };
    assert!(matches!(answer(&mut host, twice), Some(Reply::Failed { .. })));
    assert!(matches!(
        answer(&mut host, Request::Decode { id: 1, token: 4 }),
        Some(Reply::Logits { .. })
    ));
    // A header that is not one is an error, not a panic.
    assert!(wire::decode::<Request>("{\"Decode\":{\"id\":\"x\"}}").is_err());
    assert!(wire::decode::<Request>("not json").is_err());
}

/// The worker holds f16 weights lifted (`Matrix::lift_f16`: no subnormal
/// operand in its products) and computes the logits of the unlifted f16
/// weights bit for bit: a prefill, decode steps and a batch.
#[test]
fn lifted_f16_weights_in_the_worker_give_the_f16_logits_bit_for_bit() {
    let dir = bundled();
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let file = std::fs::read(dir.join("model.safetensors")).unwrap();
    let choice = decode_lab_engine::model::WeightsChoice::Exactly(Format::F16);
    let model = Arc::new(Model::from_bytes_as(&config, &file, choice).unwrap());
    let subnormal = |h: u32| h & 0x7c00 == 0 && h & 0x3ff != 0;
    let has = |m: &Matrix| m.words().iter().any(|&w| subnormal(w & 0xffff) || subnormal(w >> 16));
    assert!(model.weights.matrices().all(has), "every matrix has subnormal weights");
    let host = Host::load(&config, &file, Format::F16).unwrap();
    assert!(host.model().weights.matrices().all(Matrix::is_lifted), "the worker lifted them");
    let remote = RemoteModel::new(Rc::new(Loopback::new(host)) as Rc<dyn Link>, &model);
    let mut cpu = Session::Cpu(CpuSession::new(model.clone()));
    let mut worker = Session::Remote(remote.session());
    let p = prompt();
    let (a, b) = block_on(async {
        (
            cpu.prefill(&p, Wanted::All).await.unwrap(),
            worker.prefill(&p, Wanted::All).await.unwrap(),
        )
    });
    assert_eq!(bytes(&a), bytes(&b), "prefill, every row");
    for t in [5u32, 1999, 0, 77] {
        let (a, b) =
            block_on(async { (cpu.decode(t).await.unwrap(), worker.decode(t).await.unwrap()) });
        assert_eq!(bytes(&a), bytes(&b), "decode {t}");
    }
}
