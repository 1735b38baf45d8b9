// The self-test's fault hook (the page's `test_hooks=1&selftest_fault=KERNEL`):
// every kernel passes what it stores through `faulted` (`faulted_bits` for
// bits), and the self-test compiles the kernel it is told to corrupt with
// FAULT = 1, so that kernel computes wrong numbers on the device itself and
// the check must catch them.
// Every other pipeline has FAULT = 0: a constant at pipeline creation, so
// the select folds away and the stored value is untouched.
// CPU twin: none (it is not arithmetic of the model).

override FAULT: f32 = 0.0;

fn faulted(v: f32) -> f32 {
    return select(v, v + FAULT, FAULT != 0.0);
}

// The same for a kernel that stores bits (block_sum's wrapping sums).
fn faulted_bits(v: u32) -> u32 {
    return select(v, v + 1u, FAULT != 0.0);
}
