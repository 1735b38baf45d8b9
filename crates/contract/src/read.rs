//! Control values from a query string: a widget's presets, then every value
//! the link gives, each parsed, rounded and clamped by its row of the table,
//! with a notice for anything not taken as given. The page sets its signals
//! from the result; nothing here touches the page.

use crate::controls::{echo, Control, Input, SPECS};
use crate::query::Query;
use crate::route::{flag, Route};
use crate::widgets::{Preset, Widget};
pub use engine::kernels::KernelsChoice;
pub use engine::model::WeightsChoice;

/// Everything the page reads from its URL when it opens, with one notice per
/// value not taken as given. (The compare widget's per-column lists are read
/// by the widget: [`column_values`].)
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    pub route: Route,
    /// The widget's presets, then the URL's values, in table order.
    pub values: Vec<(Control, Val)>,
    /// `backend=cpu`.
    pub force_cpu: bool,
    /// `selftest=1`: check the GPU kernels and model against the CPU twins first.
    pub selftest: bool,
    /// `weights=`: how the GPU engine stores the weight matrices.
    pub weights: WeightsChoice,
    /// `activations=int8`: the CPU engine multiplies int8 or int4 weights by
    /// 8-bit activations (the CLI's `--activations int8`), and so runs (as
    /// `backend=cpu`); with such weights only, else a notice and f32
    /// activations.
    pub int8_activations: bool,
    /// `kernels=`: which shape of the kernels the GPU engine runs.
    pub kernels: KernelsChoice,
    /// `compare`'s columns: each column's values of
    /// [`Widget::COMPARE_COLUMN_CONTROLS`] (the URL's lists, else the defaults).
    pub columns: [[f64; 2]; 4],
    /// `quiz`'s questions (`qN.` parameters, else the course's).
    pub quiz: Vec<crate::quiz::Question>,
    pub notices: Vec<String>,
}

/// Reads the route, every control (after the widget's presets) and the
/// backend: the one path the app, the tests and the fuzz target share.
pub fn read_page(query: &Query) -> Page {
    let mut notices = Vec::new();
    let route = Route::from_query(query, &mut notices);
    let presets = route.widget.map_or(&[][..], Widget::presets);
    let skip = match route.widget {
        Some(Widget::Compare) => &Widget::COMPARE_COLUMN_CONTROLS[..],
        _ => &[],
    };
    let values = read_controls(query, presets, skip, &mut notices);
    // Read with the rest, so their notices show even when the model never loads.
    let columns = match route.widget {
        Some(Widget::Compare) => column_values(
            query,
            Widget::COMPARE_COLUMN_CONTROLS,
            Widget::COMPARE_COLUMNS,
            &mut notices,
        ),
        _ => Widget::COMPARE_COLUMNS,
    };
    let force_cpu = backend_cpu(query, &mut notices);
    let selftest = flag(query, "selftest", &mut notices, "no self-test");
    let weights = weights_choice(query, &mut notices);
    let int8_activations = int8_activations(query, weights, &mut notices);
    // The GPU engine has no such kernels.
    let force_cpu = force_cpu || int8_activations;
    let kernels = kernels_choice(&values);
    let quiz = match route.widget {
        Some(Widget::Quiz) => crate::quiz::read(query, &mut notices),
        _ => Vec::new(),
    };
    Page {
        route,
        values,
        force_cpu,
        selftest,
        weights,
        int8_activations,
        kernels,
        columns,
        quiz,
        notices,
    }
}

/// A control's value as read.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Number(f64),
    Text(String),
}

/// The value of every control that `presets` or the URL set (a control
/// named in `skip` is read by its widget itself), in table order, and a
/// notice per value not taken as given.
pub fn read_controls(
    query: &Query,
    presets: &[(Control, Preset)],
    skip: &[Control],
    notices: &mut Vec<String>,
) -> Vec<(Control, Val)> {
    let mut values: Vec<(Control, Val)> = presets
        .iter()
        .map(|&(c, p)| match p {
            Preset::Number(v) => (c, Val::Number(v)),
            Preset::Text(t) => (c, Val::Text(t.to_string())),
        })
        .collect();
    for spec in SPECS.iter().filter(|s| !skip.contains(&s.control)) {
        let Some(raw) = query.get(spec.name) else { continue };
        let val = match spec.input {
            Input::Text { .. } => Val::Text(raw.to_string()),
            Input::Choice { .. } => match spec.choose(raw) {
                Ok(option) => Val::Text(option.to_string()),
                Err(e) => {
                    notices.push(format!("{}: {e}; using the default", spec.name));
                    continue;
                }
            },
            Input::Number { .. } => match spec.read(raw) {
                Ok(taken) => {
                    if taken.adjusted {
                        notices.push(spec.adjustment(raw, taken));
                    }
                    Val::Number(taken.value)
                }
                Err(e) => {
                    notices.push(format!("{}: {e}; using the default", spec.name));
                    continue;
                }
            },
        };
        values.retain(|(c, _)| *c != spec.control);
        values.push((spec.control, val));
    }
    for (name, count) in query.repeated() {
        notices.push(format!("{} is given {count} times: the last one is used", echo(name)));
    }
    if query.cut {
        notices.push("the address is over 1 MB: only its first 1 MB was read".into());
    }
    values.sort_by_key(|(c, _)| *c as usize);
    values
}

/// One value per column for each control in `controls`, from URL lists
/// (`temperature=0,0.3,0.8,1.2`), starting from `defaults[column][i]`. A
/// list of the wrong length and every item not taken as given get a notice.
pub fn column_values<const C: usize, const N: usize>(
    query: &Query,
    controls: [Control; C],
    defaults: [[f64; C]; N],
    notices: &mut Vec<String>,
) -> [[f64; C]; N] {
    let mut cols = defaults;
    for (j, control) in controls.into_iter().enumerate() {
        let spec = control.spec();
        let Some(raw) = query.get(spec.name) else { continue };
        let items: Vec<&str> = raw.split(',').collect();
        if items.len() != N {
            let what = match items.len() > N {
                true => "the extra ones are ignored",
                false => "the columns without one keep their default",
            };
            notices.push(format!("{}: {} values for {N} columns; {what}", spec.name, items.len()));
        }
        for (i, item) in items.into_iter().take(N).enumerate() {
            match spec.read(item) {
                Ok(taken) => {
                    if taken.adjusted {
                        notices.push(format!("column {}: {}", i + 1, spec.adjustment(item, taken)));
                    }
                    cols[i][j] = taken.value;
                }
                Err(e) => notices.push(format!(
                    "{} (column {}): {e}; using the default",
                    spec.name,
                    i + 1
                )),
            }
        }
    }
    cols
}

/// The `kernels=` control's value as read (`auto` where it was not given or
/// not one of the names: its notice came with the controls).
fn kernels_choice(values: &[(Control, Val)]) -> KernelsChoice {
    let name = values.iter().rev().find_map(|(c, v)| match (c, v) {
        (Control::Kernels, Val::Text(name)) => Some(name.as_str()),
        _ => None,
    });
    name.and_then(KernelsChoice::from_name).unwrap_or(KernelsChoice::Auto)
}

/// Reads `weights=` (`auto` or a format's name), with a notice for anything else.
pub fn weights_choice(query: &Query, notices: &mut Vec<String>) -> WeightsChoice {
    let value = match query.get("weights").map(str::trim) {
        None | Some("") => return WeightsChoice::Auto,
        Some(value) => value,
    };
    WeightsChoice::from_name(value).unwrap_or_else(|| {
        notices.push(format!(
            "weights: {} is not a weight format ({}); using auto",
            echo(value),
            WeightsChoice::names()
        ));
        WeightsChoice::Auto
    })
}

/// Whether `activations=` asks for 8-bit activations (`int8`; `f32` or
/// nothing: not), which the CPU engine multiplies int8 and int4 weights by;
/// a notice for anything else, or for other weights.
pub fn int8_activations(query: &Query, weights: WeightsChoice, notices: &mut Vec<String>) -> bool {
    let value = match query.get("activations").map(str::trim) {
        None | Some("" | "f32") => return false,
        Some(value) => value,
    };
    let why = match (value, weights) {
        ("int8", WeightsChoice::Exactly(f)) if f.takes_int8_activations() => return true,
        ("int8", _) => {
            "8-bit activations multiply int8 or int4 weights: add weights=int8, int8-tensor or int4"
        }
        _ => "not one of f32 or int8",
    };
    notices.push(format!("activations: {} — {why}; using f32 activations", echo(value)));
    false
}

/// Whether `backend=` asks for the CPU engine (`cpu`); `webgpu` or nothing
/// means WebGPU where it works; anything else is a notice.
pub fn backend_cpu(query: &Query, notices: &mut Vec<String>) -> bool {
    match query.get("backend").map(str::trim) {
        None | Some("" | "webgpu" | "gpu" | "auto") => false,
        Some("cpu") => true,
        Some(other) => {
            notices.push(format!(
                "backend: {} is not a backend (cpu or webgpu); using WebGPU where it works",
                echo(other)
            ));
            false
        }
    }
}
