//! How the values of one weight matrix sit on the quantisation grids: a
//! histogram, the outliers that stretch a per-tensor grid, how many int8
//! levels a typical channel gets from one scale per tensor, and the rounding
//! error of each format (measured by packing the matrix, not estimated). The
//! quantization lesson draws these figures.

use crate::storage::format::{channel, Channels, Format};
use crate::storage::matrix::Matrix;

/// Share of weights inside the clipping cut [`Spread::p999`].
pub const CLIP_QUANTILE: f64 = 0.999;

/// One matrix's values and grids.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// Weights in the matrix.
    pub n: usize,
    /// max |w|: sets the per-tensor int8 step (`absmax / 127`).
    pub absmax: f32,
    /// The 99.9th percentile of |w|: a grid fitted to it instead of the max
    /// would clip the weights beyond it.
    pub p999: f32,
    /// The weights beyond `p999` (the outliers), in matrix order.
    pub outliers: Vec<f32>,
    /// Counts of w over `[-absmax, absmax]` in equal bins.
    pub bins: Vec<u64>,
    /// The median over output channels of each channel's max |w|.
    pub median_channel_absmax: f32,
    /// Output channels.
    pub channels: usize,
    /// Root mean square of (packed − original) per format, in `Format::ALL` order.
    pub rms_error: Vec<(Format, f64)>,
}

impl Spread {
    /// The per-tensor int8 grid step.
    pub fn tensor_step(&self) -> f32 {
        self.absmax / 127.0
    }

    /// int8 levels (of 255) the median channel spans with one scale per
    /// tensor; with one scale per channel every channel spans all 255.
    pub fn median_channel_levels(&self) -> usize {
        let step = self.tensor_step();
        match step > 0.0 {
            true => 2 * (self.median_channel_absmax / step).round() as usize + 1,
            false => 1,
        }
    }

    /// The RMS rounding error of `format`.
    pub fn error(&self, format: Format) -> f64 {
        self.rms_error.iter().find(|(f, _)| *f == format).map_or(0.0, |&(_, e)| e)
    }
}

/// The spread of `m` (in any format; its values as the kernels see them are
/// the original) in `n_bins` histogram bins.
pub fn spread(m: &Matrix, n_bins: usize) -> Spread {
    let w = m.to_f32();
    let absmax = w.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let mut mags: Vec<f32> = w.iter().map(|v| v.abs()).collect();
    mags.sort_by(f32::total_cmp);
    let rank = ((CLIP_QUANTILE * mags.len() as f64).ceil() as usize).clamp(1, mags.len().max(1));
    let p999 = mags.get(rank - 1).copied().unwrap_or(0.0);
    let outliers = w.iter().copied().filter(|v| v.abs() > p999).collect();

    let n_bins = n_bins.max(1);
    let mut bins = vec![0u64; n_bins];
    for &v in &w {
        let x = if absmax > 0.0 { (v / absmax + 1.0) / 2.0 } else { 0.5 };
        bins[((x * n_bins as f32) as usize).min(n_bins - 1)] += 1;
    }

    let channels = match m.channels {
        Channels::Rows => m.rows,
        Channels::Cols => m.cols,
    };
    let mut channel_absmax = vec![0.0f32; channels];
    for (i, &v) in w.iter().enumerate() {
        let c = &mut channel_absmax[channel(i, m.cols, m.channels)];
        *c = c.max(v.abs());
    }
    channel_absmax.sort_by(f32::total_cmp);
    let median_channel_absmax = channel_absmax.get(channels / 2).copied().unwrap_or(0.0);

    let original = Matrix::new(Format::F32, m.rows, m.cols, m.channels, &w);
    let rms_error = Format::ALL
        .into_iter()
        .map(|f| {
            let back = original.to_format(f).to_f32();
            let sq: f64 = w.iter().zip(&back).map(|(&a, &b)| f64::from(a - b).powi(2)).sum();
            (f, (sq / w.len().max(1) as f64).sqrt())
        })
        .collect();
    Spread { n: w.len(), absmax, p999, outliers, bins, median_channel_absmax, channels, rms_error }
}
