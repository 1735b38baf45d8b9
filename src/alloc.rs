//! The app's allocator: the system one, counting the bytes in use, so the
//! long-session test can tell memory held (a leak) from memory the wasm
//! linear memory grew to once and keeps (it never shrinks).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Bytes allocated and not yet freed.
pub fn in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            IN_USE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}
