//! The controls' live values: one leptos signal per row of the control
//! table (`contract::SPECS`), and the settings and run they describe.

use contract::controls::stops;
use contract::turns::{turns, Chat};
use contract::{Control, Drives, Input, SPECS};
use engine::run::Job;
use engine::sample::Settings;
use leptos::prelude::*;

/// One control's live value.
#[derive(Clone, Copy)]
pub enum Value {
    Number(RwSignal<f64>),
    Text(RwSignal<String>),
}

/// Every control's value, one signal per row of the table.
#[derive(Clone, Copy)]
pub struct Controls {
    values: [Value; SPECS.len()],
}

impl Controls {
    /// Every control at its default (a widget's presets and the URL come after).
    pub fn new() -> Controls {
        Controls {
            values: std::array::from_fn(|i| match SPECS[i].input {
                Input::Number { default, .. } => Value::Number(RwSignal::new(default)),
                Input::Text { default } | Input::Choice { default, .. } => {
                    Value::Text(RwSignal::new(default.to_string()))
                }
            }),
        }
    }

    /// The value of `control`.
    pub fn value(&self, control: Control) -> Value {
        self.values[control as usize]
    }

    /// The signal of a number control.
    pub fn number(&self, control: Control) -> RwSignal<f64> {
        match self.value(control) {
            Value::Number(s) => s,
            Value::Text(_) => panic!("{} is a text control", control.spec().name),
        }
    }

    /// The signal of a text control.
    pub fn text(&self, control: Control) -> RwSignal<String> {
        match self.value(control) {
            Value::Text(s) => s,
            Value::Number(_) => panic!("{} is a number control", control.spec().name),
        }
    }

    /// Whether `chat=yes` (tracks only that control).
    pub fn chat_on(&self) -> bool {
        self.text(Control::Chat).with(|v| v == "yes")
    }

    /// With `chat=yes`, the system turn (empty for none) and the earlier
    /// turns; `None` without it (tracked).
    pub fn chat(&self) -> Option<Chat> {
        self.chat_on().then(|| Chat {
            system: self.text(Control::System).get(),
            turns: turns(&self.text(Control::Turns).get()),
        })
    }

    /// The sampling settings the controls describe (tracks only the
    /// controls that drive a setting).
    pub fn settings(&self) -> Settings {
        let mut s = Settings::default();
        for spec in SPECS {
            if let Drives::Setting(apply) = spec.drives {
                apply(&mut s, self.number(spec.control).get());
            }
        }
        s
    }

    /// [`Controls::settings`] without tracking.
    pub fn settings_untracked(&self) -> Settings {
        untrack(|| self.settings())
    }

    /// The run the controls describe: settings, seed, stop strings, length.
    pub fn job_untracked(&self) -> Job {
        untrack(|| {
            let mut job =
                Job { settings: self.settings(), seed: 0, stop: Vec::new(), max_tokens: 0 };
            for spec in SPECS {
                match spec.drives {
                    Drives::Run(apply) => apply(&mut job, self.number(spec.control).get()),
                    Drives::Stop => job.stop = stops(&self.text(spec.control).get()),
                    Drives::Setting(_)
                    | Drives::Prompt
                    | Drives::Chat
                    | Drives::View
                    | Drives::Lesson
                    | Drives::Engine => {}
                }
            }
            job
        })
    }
}
