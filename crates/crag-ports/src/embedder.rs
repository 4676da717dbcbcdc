use std::fmt::Debug;
use std::ops::Range;

use async_trait::async_trait;

use crate::PortResult;

/// Turns texts into dense vectors.
#[async_trait]
pub trait Embedder: Debug + Send + Sync + 'static {
    /// Returns a stable identifier of the model, e.g. `all-MiniLM-L6-v2`.
    fn model_id(&self) -> &str;

    /// Returns the length of every vector this embedder produces.
    fn dimension(&self) -> usize;

    /// Returns the most tokens (special tokens included) one input can carry; the rest is cut.
    fn max_tokens(&self) -> usize;

    /// Returns the byte ranges of the model's tokens in `text` (no special tokens), in order.
    ///
    /// The ingestion pipeline chunks by these, so chunks fit the model.
    fn token_spans(&self, text: &str) -> PortResult<Vec<Range<usize>>>;

    /// Returns the number of the model's tokens in `text`: `token_spans(text)?.len()`, which
    /// an adapter may compute faster (packing and refinement count every result's text).
    fn count_tokens(&self, text: &str) -> PortResult<usize> {
        Ok(self.token_spans(text)?.len())
    }

    /// Embeds a batch of texts; returns one L2-normalised vector per text, in order.
    async fn embed(&self, texts: &[String]) -> PortResult<Vec<Vec<f32>>>;
}
