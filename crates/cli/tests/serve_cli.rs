//! `decode-lab serve-sim`: on both engines every scheduler serves each
//! request its run alone (✓) and prints the figures; a typed trace is
//! replayed as typed; bad schedulers, slots and trace lines are clear errors.

mod common;

use common::{backends, decode_lab};

fn bundled() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../www/models/shakespeare").to_string()
}

fn serve(args: &[&str]) -> (bool, String, String) {
    let m = bundled();
    let mut all = vec!["serve-sim", "--model", &m];
    all.extend_from_slice(args);
    let out = decode_lab(&all);
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn every_scheduler_serves_each_request_its_run_alone_with_its_figures() {
    for backend in backends() {
        for (scheduler, slots) in [("once", "1"), ("static", "3"), ("continuous", "3")] {
            let (ok, out, err) = serve(&[
                "--backend",
                backend,
                "--scheduler",
                scheduler,
                "--requests",
                "4",
                "--rate",
                "1",
                "--slots",
                "3",
                "--max-tokens",
                "5",
            ]);
            assert!(ok, "{backend} {scheduler}: {err}");
            assert!(
                out.starts_with(&format!("scheduler {scheduler} on 3 slots: 4 requests")),
                "{out}"
            );
            for line in ["throughput", "first token       mean", "end to end        mean"] {
                assert!(out.contains(line), "{backend} {scheduler}: {line}\n{out}");
            }
            assert!(out.contains(&format!(" % of {slots} slot(s)")), "{out}");
            assert_eq!(out.matches("] ✓\n").count(), 4, "{backend} {scheduler}:\n{out}");
        }
    }
}

#[test]
fn a_typed_trace_is_replayed_as_typed_and_bad_input_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("serve-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.txt");
    std::fs::write(&trace, "# step prompt max_tokens seed\n0 0 3 7\n2 1 4 8\n2 3 2 9\n").unwrap();
    let t = trace.to_str().unwrap();
    let (ok, out, err) = serve(&["--backend", "cpu", "--trace", t, "--slots", "2"]);
    assert!(ok, "{err}");
    assert!(out.contains("3 requests, 9 tokens"), "{out}");
    assert!(out.contains("[request 1, arrives at step 2, seed 8] ✓\nJULIET:"), "{out}");
    std::fs::write(&trace, "0 0 3 7\n1 9 3 7\n").unwrap();
    let (ok, _, err) = serve(&["--backend", "cpu", "--trace", t]);
    assert!(!ok && err.contains("line 2"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Static batching wastes the slot-steps a finished request waits for its
    // batch's longest: here 2 tokens beside 8 (the continuous scheduler has
    // nobody to give the slot to either, and wastes as many).
    std::fs::write(&trace, "0 0 2 7\n0 1 8 8\n").unwrap();
    let (ok, out, err) =
        serve(&["--backend", "cpu", "--trace", t, "--slots", "2", "--scheduler", "static"]);
    assert!(ok, "{err}");
    let wasted: usize = out
        .split(" slot-steps wasted)")
        .next()
        .and_then(|l| l.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no wasted slot-steps figure: {out}"));
    assert!(wasted >= 6, "static batching on a 2 + 8 token batch wastes at least 6: {out}");
    // Flags a typed trace would ignore, and a wait without static batching, are refused.
    for flag in [["--max-tokens", "5"], ["--requests", "3"], ["--seed", "1"], ["--rate", "1"]] {
        let (ok, _, err) = serve(&["--backend", "cpu", "--trace", t, flag[0], flag[1]]);
        assert!(!ok && err.contains("cannot be used with"), "{flag:?}: {err}");
    }
    let (ok, _, err) = serve(&["--backend", "cpu", "--scheduler", "continuous", "--timeout", "2"]);
    assert!(!ok && err.contains("--timeout is static batching's wait"), "{err}");
    let (ok, _, err) = serve(&["--backend", "cpu", "--scheduler", "fifo"]);
    assert!(!ok && err.contains("one of once, static, continuous"), "{err}");
    let (ok, _, err) = serve(&["--backend", "cpu", "--slots", "0"]);
    assert!(!ok && err.contains("--slots 0"), "{err}");
    let (ok, _, err) = serve(&["--backend", "cpu", "--rate", "0"]);
    assert!(!ok && err.contains("--rate 0"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
