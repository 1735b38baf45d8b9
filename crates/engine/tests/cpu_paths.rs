//! The CPU twins' fast paths for f16 weights against their path for any
//! format (`shared/f16_paths.rs`), so the CPU engine's numbers do not depend
//! on how a checkpoint stores its weights. And the same kernels on one thread
//! and on several, and in AVX2 and the portable loops: equal bit for bit.
#![cfg(not(target_arch = "wasm32"))]

use decode_lab_engine::fast;
use decode_lab_engine::gpu::selftest::cases;
use decode_lab_engine::kernels::lm_head;
use decode_lab_engine::storage::format::{Channels, Format};
use decode_lab_engine::storage::matrix::Matrix;

#[path = "shared/f16_paths.rs"]
mod f16_paths;
#[path = "shared/portable_forward.rs"]
mod portable_forward;

use f16_paths::{bits, pair_as};

#[test]
fn the_cpu_engines_loops_equal_the_plain_twins_bit_for_bit() {
    f16_paths::fast_equals_the_plain_twins();
}

#[test]
fn matmul_f16_path_equals_the_f32_path_bit_for_bit() {
    f16_paths::matmul_f16_equals_f32();
}

#[test]
fn lm_head_f16_path_equals_the_f32_path_bit_for_bit() {
    f16_paths::lm_head_f16_equals_f32();
}

#[test]
fn matmul_in_panels_equals_the_f32_path_bit_for_bit() {
    f16_paths::matmul_in_panels_equals_f32();
}

#[test]
fn matmul_on_f32_in_panels_gives_the_twins_bits() {
    f16_paths::f32_panels_give_the_twins_bits();
}

#[test]
fn panels_hold_the_matrix_and_only_whole_ones_are_made() {
    f16_paths::panels_hold_the_matrix();
}

#[test]
fn a_weight_of_64_or_more_is_not_lifted() {
    f16_paths::lift_refuses_64();
}

/// An int8, bf16 or f32 matrix in column panels (the CPU layout; int8's on
/// x86-64 only) holds every value, and its decode steps and prefills give
/// the twin's bits on the row-major matrix, in AVX2 and the portable loops,
/// on any number of threads, at awkward sizes.
#[test]
fn int8_bf16_and_f32_in_panels_give_the_twins_bits() {
    use decode_lab_engine::fast::parallel;
    use decode_lab_engine::kernels::matmul;
    for format in [Format::Int8, Format::Int8PerTensor, Format::Bf16, Format::F32] {
        for (m, k, n) in [(1, 1, 32), (1, 63, 64), (1, 65, 160), (2, 3, 96), (17, 130, 64)] {
            let rows = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 21));
            let mut p = rows.clone();
            assert!(p.into_panels() && p.cpu_only());
            assert_eq!(bits(&p.to_f32()), bits(&rows.to_f32()), "panels keep every value");
            let (x, bias) = (cases::random(m * k, 22), cases::random(n, 23));
            let mut want = vec![0.0; m * n];
            matmul::run_cpu(&x, &rows, &bias, &mut want);
            let run = || {
                let mut out = vec![0.0; m * n];
                fast::matmul::run(&x, &p, &bias, &mut out);
                bits(&out)
            };
            let what = format!("{} m {m} k {k} n {n}", format.name());
            assert_eq!(run(), bits(&want), "{what}");
            assert_eq!(parallel::without_avx2(run), bits(&want), "{what} portable");
            assert_eq!(on_threads(3, run), bits(&want), "{what} threads");
        }
    }
}

/// The f16 head's logits are x · w to f32 precision, and only its shard's are written.
#[test]
fn lm_head_f16_logits_are_dot_products() {
    for cols in [2, 6, 8, 14, 64, 770] {
        let rows = 37;
        let (w16, w32) = pair_as(rows, cols, Channels::Rows, cols as u64, false);
        let x = cases::random(3 * cols, 5);
        let mut a = vec![0.0; 2 * 50];
        lm_head::run_cpu(&x, &w16, 7, 50, 1, 2, &mut a);
        // Only the shard's logits are written; each is x · w to f32 precision.
        for r in 0..2 {
            for v in 0..50 {
                let got = a[r * 50 + v];
                if !(7..7 + rows).contains(&v) {
                    assert_eq!(got, 0.0);
                    continue;
                }
                let row = &w32.to_f32()[(v - 7) * cols..][..cols];
                let xr = &x[(1 + r) * cols..][..cols];
                let want: f64 = xr.iter().zip(row).map(|(&a, &b)| a as f64 * b as f64).sum();
                let scale: f64 =
                    xr.iter().zip(row).map(|(&a, &b)| (a as f64 * b as f64).abs()).sum();
                assert!((got as f64 - want).abs() <= 1e-6 * scale.max(1.0), "cols {cols} v {v}");
            }
        }
    }
}

/// `f` on a pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool").install(f)
}

#[test]
fn matmul_and_lm_head_give_the_same_bits_on_any_number_of_threads() {
    for format in Format::ALL {
        // The last: a decode step of whole int4 groups, split among threads
        // (each part's rows a stride apart: int4_rows::Parts), in AVX2's
        // copy too where the CPU has AVX-512.
        let shapes =
            [(1, 513, 1757), (1, 512, 1758), (5, 129, 2050), (1, 75, 1792), (1, 515, 1792)];
        for (m, k, n) in shapes {
            let w = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 7));
            matmul_same_on_threads(m, &w, &format!("{} matmul", format.name()));
            if format == Format::Int4 && k == 515 {
                let what = format!("{} matmul, AVX2", format.name());
                fast::parallel::without_avx512(|| matmul_same_on_threads(m, &w, &what));
            }
        }
        let (rows, cols) = (1757, 514);
        let head = Matrix::new(format, rows, cols, Channels::Rows, &cases::random(rows * cols, 10));
        let x = cases::random(3 * cols, 11);
        let run = |threads| {
            on_threads(threads, || {
                let mut logits = vec![0.0; 2 * 2000]; // vocab_size 2000, v0 = 200
                fast::lm_head::run(&x, &head, 200, 2000, 1, 2, &mut logits);
                bits(&logits)
            })
        };
        let one = run(1);
        assert_eq!(one, run(2), "{} lm_head", format.name());
        assert_eq!(one, run(3), "{} lm_head", format.name());
    }
}

/// An f16 matrix in panels (the CPU worker's blocks) is split among threads
/// at panel boundaries, each output still computed as unsplit.
#[test]
fn matmul_in_panels_gives_the_same_bits_on_any_number_of_threads() {
    for (m, k, n) in [(1, 513, 1760), (5, 129, 2048)] {
        let mut w = Matrix::new(Format::F16, k, n, Channels::Cols, &cases::random(k * n, 7));
        assert!(w.into_panels());
        matmul_same_on_threads(m, &w, "panels");
    }
}

/// `x @ w + bias` for `m` random rows of x: the same bits on 1, 2 and 3 threads.
fn matmul_same_on_threads(m: usize, w: &Matrix, what: &str) {
    let (k, n) = (w.rows, w.cols);
    let (x, bias) = (cases::random(m * k, 8), cases::random(n, 9));
    let run = |threads| {
        on_threads(threads, || {
            let mut out = vec![0.0; m * n];
            fast::matmul::run(&x, w, &bias, &mut out);
            bits(&out)
        })
    };
    let one = run(1);
    assert_eq!(one, run(2), "{what} {m}x{k}x{n}");
    assert_eq!(one, run(3), "{what} {m}x{k}x{n}");
}

/// Natively on x86-64 the twins run AVX-512 or AVX2 copies of their loops
/// where the CPU has them; they give the bits of the portable loops (the
/// ones wasm runs).
#[test]
fn avx2_loops_give_the_bits_of_the_portable_loops() {
    use decode_lab_engine::fast::parallel;
    if !parallel::avx2() {
        return; // nothing to compare on this CPU
    }
    // A prefill block, a decode step, a decode step and a prefill of whole
    // int4 groups.
    let shapes = [(17, 67, 258), (1, 67, 258), (1, 67, 256), (17, 130, 256)];
    for (format, (m, k, n)) in Format::ALL.into_iter().flat_map(|f| shapes.map(|s| (f, s))) {
        let w = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 12));
        let (x, bias) = (cases::random(m * k, 13), cases::random(n, 14));
        // A head of odd width, and of whole int4 groups with a scale per row
        // and per column (rows 301: not a multiple of four).
        let shapes = [(130, Channels::Rows), (96, Channels::Rows), (96, Channels::Cols)];
        let heads = shapes.map(|(cols, channels)| {
            let head = Matrix::new(format, 301, cols, channels, &cases::random(301 * cols, 15));
            (head, cases::random(2 * cols, 16))
        });
        let run = || {
            let mut out = vec![0.0; m * n];
            fast::matmul::run(&x, &w, &bias, &mut out);
            let logits = heads.each_ref().map(|(head, hx)| {
                let mut logits = vec![0.0; m.min(2) * 301];
                fast::lm_head::run(hx, head, 0, 301, 0, m.min(2), &mut logits);
                bits(&logits)
            });
            (bits(&out), logits)
        };
        let wide = run();
        assert_eq!(wide, parallel::without_avx2(run), "{}", format.name());
        // Where the CPU has AVX-512, `wide` ran its copies: AVX2's are the same bits too.
        assert_eq!(wide, parallel::without_avx512(run), "{} avx2", format.name());
    }
    // Every format the CPU layout puts in column panels, a prefill and a
    // decode step: the AVX-512 copy (chosen on Intel cores, forced here on
    // any core with AVX-512) and AVX2's give the portable loops' bits.
    let panelled = [Format::F32, Format::F16, Format::Bf16, Format::Int8, Format::Int8PerTensor];
    for (format, (m, k, n)) in
        panelled.into_iter().flat_map(|f| [(17, 67, 352), (1, 67, 352)].map(|s| (f, s)))
    {
        let mut w = Matrix::new(format, k, n, Channels::Cols, &cases::random(k * n, 12));
        assert!(w.into_panels(), "{} in panels", format.name());
        let (x, bias) = (cases::random(m * k, 13), cases::random(n, 14));
        let run = || {
            let mut out = vec![0.0; m * n];
            fast::matmul::run(&x, &w, &bias, &mut out);
            bits(&out)
        };
        let what = format!("{} panels {m}x{k}x{n}", format.name());
        let portable = parallel::without_avx2(run);
        assert_eq!(run(), portable, "{what}");
        assert_eq!(parallel::with_wide_panels(run), portable, "{what} avx-512");
        assert_eq!(parallel::without_avx512(run), portable, "{what} avx2");
    }
}

/// The whole CPU forward pass gives the bits it gives in wasm (`browser.rs`
/// checks the same fingerprint in Chromium).
#[test]
fn cpu_logits_are_bit_identical_to_wasm() {
    assert_eq!(portable_forward::forward_fingerprint(), portable_forward::FORWARD_FINGERPRINT);
}

/// So do int8 and int4 multiplying 8-bit activations, whose AVX2 loops
/// (here) and portable ones (wasm's, and here without AVX2) give one set of
/// bits.
#[test]
fn int8_activation_logits_are_bit_identical_to_wasm() {
    let native = portable_forward::acts8_fingerprint();
    assert_eq!(native, fast::parallel::without_avx2(portable_forward::acts8_fingerprint));
    assert_eq!(native, portable_forward::ACTS8_FINGERPRINT);
    let kernels = portable_forward::acts8_kernel_fingerprint();
    assert_eq!(kernels, fast::parallel::without_avx2(portable_forward::acts8_kernel_fingerprint));
    assert_eq!(kernels, portable_forward::ACTS8_KERNEL_FINGERPRINT);
}

/// A prefill's attention is cut among threads into contiguous rows of about
/// equal work (`parallel::parts_by_work`): every logit keeps its bits on
/// one thread and on three, for a first prefill (keys from 0) and a second
/// one after it (keys from 30), each long enough to be cut.
#[test]
fn a_prefills_attention_gives_the_same_bits_on_any_number_of_threads() {
    use decode_lab_engine::cpu::CpuSession;
    use decode_lab_engine::model::Model;
    use decode_lab_engine::Wanted;
    let config = include_str!("../../../tests/fixtures/golden/untied_f16/config.json");
    let weights = include_bytes!("../../../tests/fixtures/golden/untied_f16/model.safetensors");
    let model = std::sync::Arc::new(Model::from_bytes(config, weights).expect("model loads"));
    let (e, vocab) = (model.config.n_embd, model.config.vocab_size as u32);
    let prompt: Vec<u32> = (0..96).map(|i| i * 53 % vocab).collect();
    // (keys0, rows) of each prefill, and the work of its row r
    for (keys0, rows) in [(0, 96), (30, 66)] {
        let parts =
            on_threads(3, || fast::parallel::parts_by_work(rows, |r| (keys0 + r + 1) * 2 * e));
        assert!(parts.len() > 1, "rows from {keys0} are cut: {parts:?}");
        let work: Vec<usize> =
            parts.iter().map(|p| p.clone().map(|r| keys0 + r + 1).sum()).collect();
        let (most, least) = (work.iter().max().unwrap(), work.iter().min().unwrap());
        assert!(most - least <= 2 * (keys0 + rows), "about equal work: {work:?}");
    }
    let run = |threads| {
        on_threads(threads, || {
            let mut session = CpuSession::new(model.clone());
            let mut logits = session.forward(&prompt[..30], Wanted::All).expect("prefill");
            logits.extend(session.forward(&prompt[30..], Wanted::All).expect("second prefill"));
            bits(&logits)
        })
    };
    assert_eq!(run(1), run(3), "logits on one thread and on three");
}

/// An f32 or int8 LM head in row panels (the CPU layout's) holds the
/// row-major head's values and gives its logits bit for bit (and so the
/// twin's): in AVX-512, AVX2 and the portable loops, on one thread and on three, for
/// one row of x (the panel loop; rows outside whole panels) and for two
/// (rows gathered); cut into shards too. int8 with a scale a row, a scale
/// a column, and int8-tensor. Only an f32 or int8 head at least a panel
/// long and whole runs wide is laid out so.
#[test]
fn a_head_in_row_panels_gives_the_row_major_bits() {
    use decode_lab_engine::fast::parallel;
    let shapes = [(8, 16), (9, 96), (63, 32), (65, 48), (1757, 512)];
    let kinds = [
        (Format::F32, Channels::Rows),
        (Format::Int8, Channels::Rows),
        (Format::Int8, Channels::Cols),
        (Format::Int8PerTensor, Channels::Rows),
        (Format::Int4, Channels::Rows),
    ];
    for ((rows, cols), (format, channels)) in shapes.into_iter().flat_map(|s| kinds.map(|k| (s, k)))
    {
        if format == Format::Int4 && cols % 32 != 0 {
            continue; // whole groups a row only (refused below)
        }
        let what = format!("{} {channels:?} {rows}x{cols}", format.name());
        let head = Matrix::new(format, rows, cols, channels, &cases::random(rows * cols, 21));
        let values = head.to_f32();
        let mut panelled = head.clone();
        assert!(panelled.into_row_panels() && panelled.cpu_only() && panelled.as_f32().is_none());
        assert!(!panelled.clone().into_row_panels(), "laid out once");
        assert_eq!(panelled.to_f32(), values, "{what}");
        assert!((0..rows * cols).step_by(7).all(|i| panelled.get(i) == values[i]), "{what}");
        for r in [0, rows / 2, rows - 1] {
            let mut buf = Vec::new();
            let row = &values[r * cols..][..cols];
            assert_eq!(panelled.row(r, &mut buf), row, "{what}, row {r}");
            let part = panelled.row_part(r, 5..cols - 3, &mut buf);
            assert_eq!(part, &row[5..cols - 3], "{what}, row {r}'s part");
        }
        let x = cases::random(3 * cols, 22);
        // vocab_size rows + 5, v0 = 3: only the shard's logits written
        let logits = |h: &Matrix, n_out: usize| {
            let mut out = vec![0.0; n_out * (rows + 5)];
            fast::lm_head::run(&x, h, 3, rows + 5, 1, n_out, &mut out);
            bits(&out)
        };
        for n_out in [1, 2] {
            let what = format!("{what}, {n_out} rows of x");
            let mut twin = vec![0.0; n_out * (rows + 5)];
            lm_head::run_cpu(&x, &head, 3, rows + 5, 1, n_out, &mut twin);
            let want = logits(&head, n_out);
            assert_eq!(want, bits(&twin), "{what}: row-major against the twin");
            assert_eq!(logits(&panelled, n_out), want, "{what}");
            let portable = || logits(&panelled, n_out);
            assert_eq!(parallel::without_avx2(portable), want, "{what}, portable");
            let no_avx512 = parallel::without_avx512(|| logits(&panelled, n_out));
            assert_eq!(no_avx512, want, "{what}, AVX2 without AVX-512");
            // The f32 and int8 panels' AVX-512 copies run where the column
            // panels' do (Intel cores): both ways on any AVX-512 core.
            let wide = parallel::with_wide_panels(|| logits(&panelled, n_out));
            assert_eq!(wide, want, "{what}, AVX-512 panels");
            let narrow = parallel::with_narrow_panels(|| logits(&panelled, n_out));
            assert_eq!(narrow, want, "{what}, AVX2 panels");
            assert_eq!(on_threads(3, || logits(&panelled, n_out)), want, "{what}, 3 threads");
        }
        if rows > 32 && channels == Channels::Rows {
            // A shard from a shard boundary to the end: a part panel at its end.
            for (r0, r1) in [(32, rows), (0, 32)] {
                let (shard, want) = (panelled.shard(r0, r1), head.shard(r0, r1));
                assert_eq!(shard.to_f32(), want.to_f32(), "{what}, rows {r0}..{r1}");
                let (mut a, mut b) = (vec![0.0; rows + 5], vec![0.0; rows + 5]);
                fast::lm_head::run(&x, &shard, r0, rows + 5, 0, 1, &mut a);
                fast::lm_head::run(&x, &want, r0, rows + 5, 0, 1, &mut b);
                assert_eq!(bits(&a), bits(&b), "{what}, rows {r0}..{r1}'s logits");
            }
        }
    }
    let not = |format: Format, rows: usize, cols: usize| {
        let values = cases::random(rows * cols, 23);
        !Matrix::new(format, rows, cols, Channels::Rows, &values).into_row_panels()
    };
    assert!(not(Format::F16, 64, 64) && not(Format::Bf16, 64, 64), "f32, int8 and int4 only");
    assert!(not(Format::F32, 7, 64) && not(Format::F32, 64, 24), "a panel long, whole runs");
    assert!(not(Format::Int8, 7, 64) && not(Format::Int8, 64, 24), "a panel long, whole runs");
    assert!(not(Format::Int4, 7, 64) && not(Format::Int4, 64, 48), "a panel long, whole groups");
}

/// The CPU layout (`Weights::use_cpu_layout`: f16 lifted, the blocks in
/// column panels, an f32, int8 or int4 head in row panels) changes no logit: a
/// prefill and decode steps of a tied model (`tiny_odd`: its embedding is
/// the head, read by rows of panels) and an untied one (`untied_f16`: 515
/// head rows, a part panel at the end; tied too, its embedding 64 wide), in
/// f32, f16, int8, int8-tensor and int4,
/// bit for bit.
#[test]
fn the_cpu_layout_changes_no_logit() {
    use decode_lab_engine::cpu::CpuSession;
    use decode_lab_engine::model::Model;
    use decode_lab_engine::Wanted;
    use std::sync::Arc;
    let models = [
        (
            include_str!("../../../tests/fixtures/golden/tiny_odd/config.json"),
            &include_bytes!("../../../tests/fixtures/golden/tiny_odd/model.safetensors")[..],
        ),
        (
            include_str!("../../../tests/fixtures/golden/untied_f16/config.json"),
            &include_bytes!("../../../tests/fixtures/golden/untied_f16/model.safetensors")[..],
        ),
    ];
    let formats = [Format::F32, Format::F16, Format::Int8, Format::Int8PerTensor, Format::Int4];
    #[cfg(target_arch = "x86_64")]
    let avx512 = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw");
    #[cfg(not(target_arch = "x86_64"))]
    let avx512 = false;
    let mut loaded: Vec<Model> = models
        .iter()
        .map(|(config, weights)| Model::from_bytes(config, weights).unwrap())
        .collect();
    let mut tied = loaded[1].clone(); // its embedding the head: 64 wide, whole int4 groups
    tied.weights.lm_head = None;
    loaded.push(tied);
    for (loaded, format) in loaded.iter().flat_map(|m| formats.map(|f| (m, f))) {
        let model = loaded.to_format(format).unwrap();
        let vocab = model.config.vocab_size as u32;
        let mut fast = model.clone();
        fast.weights.use_cpu_layout();
        let head = fast.weights.lm_head();
        let head_in_row_panels = head.f32_row_panels().is_some()
            || head.int8_row_panels().is_some()
            || head.int4_row_panels().is_some();
        // int4: where AVX-512 reads it, whole groups a row.
        let int4_takes = avx512 && head.cols % 32 == 0;
        let want = format != Format::F16 && (format != Format::Int4 || int4_takes);
        assert_eq!(head_in_row_panels, want, "{}", format.name());
        let logits = |m: Model| {
            let mut session = CpuSession::new(Arc::new(m));
            let prompt: Vec<u32> = (0..13).map(|i| i * 41 % vocab).collect();
            let mut logits = session.forward(&prompt, Wanted::All).unwrap();
            for t in 0..4u32 {
                logits.extend(session.forward(&[t * 97 % vocab], Wanted::Last).unwrap());
            }
            bits(&logits)
        };
        assert_eq!(logits(fast), logits(model), "{} {}", format.name(), vocab);
    }
}
