//! Custom-logits mode (`?logits=3,2,1,0.5,0.1&labels=the,a,an,this,some`): the
//! distribution panel and its controls on numbers an author gives, with no
//! model download — a textbook example, exactly.

use contract::{Control, Shown, Widget};
use leptos::prelude::*;

use crate::registry::Controls;
use crate::widgets::{Logits, Source, WidgetView};

/// The panel over the author's logits, with the controls that apply to them.
#[component]
pub fn CustomLogits(logits: Logits, controls: Controls, shown: Shown) -> impl IntoView {
    let shown = if shown.from_url {
        shown
    } else {
        let c = [Control::Temperature, Control::TopK, Control::TopP, Control::MinP, Control::Bars];
        Shown { controls: c.iter().map(|&c| (c, false)).collect(), from_url: false }
    };
    view! {
        <div class="custom-logits">
            <p class="note">"These are the logits given in the link, not a model's: every number below is exact for them."</p>
            <WidgetView widget=Widget::Temperature source=Source::Logits(logits) controls=controls shown=shown/>
        </div>
    }
}
