// grid_1d: the element an invocation handles in a pass of one invocation per
// element, whose workgroups `grid_1d` (kernels/mod.rs) folds into a 2-D grid
// past 65,535; and the uniform of the kernels that know nothing else.

struct Elements {
    n: u32, // elements
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

fn grid_1d_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}
