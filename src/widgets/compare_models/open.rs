//! Model B of the side-by-side lesson: this page's model again in another
//! weight format (nothing to download), or another checkpoint's folder
//! (`model_b=`, read as `model=` is: a Hub id or a folder address) fetched
//! the way the page's own model is (progress, the size and checksum record,
//! Cache Storage), then opened on this page's engine: uploaded to the same
//! GPU with the same kernels, or in a CPU worker of its own.

use std::rc::Rc;
use std::sync::Arc;

use contract::WeightsChoice;
use engine::model::Tokenizer;
use engine::open::Engine;
use leptos::prelude::WithValue;

use crate::driver::Driver;
use crate::lab::{open_worker, tokenizer_fits, LoadError, Progress};
use crate::load::download::BigDownload;
use crate::load::model_files::{fetch_files, parse, ALL_FILES};
use crate::load::source::ModelSource;
use crate::widgets::measuring::size;
use crate::worker::CpuWorker;

/// Model B, open.
pub struct ModelB {
    /// (`model_b`, `weights_b`) as asked: a change opens it again.
    pub asked: (String, String),
    pub engine: Engine,
    pub tokenizer: Rc<Tokenizer>,
    /// In words: where it came from, its format and size.
    pub label: String,
    /// Its context length.
    pub n_positions: usize,
}

/// Why model B did not open.
pub enum NotOpened {
    Failed(String),
    /// Its download is big: the user is asked first, as for the page's own model.
    Confirm(BigDownload),
}

impl From<String> for NotOpened {
    fn from(why: String) -> NotOpened {
        NotOpened::Failed(why)
    }
}

/// Opens model B as asked (`confirmed`: the user said yes to its download);
/// `progress` hears of each download.
pub async fn open(
    d: Driver,
    (address, weights): (String, String),
    confirmed: bool,
    progress: impl Fn(Progress),
) -> Result<ModelB, NotOpened> {
    let choice = WeightsChoice::from_name(&weights)
        .ok_or_else(|| format!("weights_b: {weights} is not one of {}", WeightsChoice::names()))?;
    let asked = (address.clone(), weights.clone());
    let engine = d.lab.with_value(|l| l.engine());
    if address.trim().is_empty() {
        let (model, tokenizer) = d.lab.with_value(|l| {
            let model = match choice {
                WeightsChoice::Auto => Ok(l.model.clone()),
                WeightsChoice::Exactly(format) => l.variant(format),
            };
            (model, l.tokenizer.clone())
        });
        let model = model?;
        let label = format!(
            "this page's model as {} ({})",
            model.format().name(),
            size(model.weights.bytes() as f64)
        );
        let n_positions = model.config.n_positions;
        let engine = engine.reopen(model).await.map_err(|e| e.to_string())?;
        return Ok(ModelB { asked, engine, tokenizer, label, n_positions });
    }
    let source = ModelSource { base: contract::model_base(&address)? };
    let on_gpu = matches!(engine, Engine::Gpu(_));
    let fetched = match fetch_files(&source, confirmed, choice, on_gpu, &progress).await {
        Ok(f) => f,
        Err(LoadError::Failed(why)) => return Err(NotOpened::Failed(why)),
        Err(LoadError::Confirm(big)) => return Err(NotOpened::Confirm(big)),
    };
    let parsed = parse(&source, &fetched, choice);
    if parsed.is_err() {
        // A corrupt file must not stay cached: the next try downloads it again.
        source.forget(&ALL_FILES).await;
    }
    let (model, tokenizer) = parsed?;
    tokenizer_fits(&model, &tokenizer)?;
    let format = choice.format(&model);
    let model = Arc::new(model.into_format(format).map_err(|e| e.to_string())?);
    let label =
        format!("{} as {} ({})", source.label(), format.name(), size(model.weights.bytes() as f64));
    let n_positions = model.config.n_positions;
    let engine = match engine {
        // The page's worker holds the page's model: model B gets a worker of its own.
        Engine::Remote(_) => {
            let worker = CpuWorker::start(&fetched.config, &fetched.weights, &model).await?;
            open_worker(worker, model).await?
        }
        engine => engine.reopen(model).await.map_err(|e| e.to_string())?,
    };
    Ok(ModelB { asked, engine, tokenizer: Rc::new(tokenizer), label, n_positions })
}
