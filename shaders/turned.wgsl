// turned (a snippet of rope, kv_renumber and qkv_pair): the rotary pair
// (x, y) turned by the angle whose cosine and sine are t:
// (x·cos − y·sin, y·cos + x·sin), in this order of operations so that every
// kernel that turns rounds as its CPU twin `rope::turned` does.
fn turned(x: f32, y: f32, t: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(x * t.x + -y * t.y, y * t.x + x * t.y);
}
