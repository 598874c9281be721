//! What a frame reads: the model, its counters, the feed and the view, and the totals the header,
//! the sidebar and the burn share. Every pane draws from one `Scene`.

use super::feed::Feed;
use super::view::View;
use crate::model::{Model, Rollup};
use crate::router::Counters;

/// What every pane reads to draw itself.
pub struct Scene<'a> {
    pub model: &'a Model,
    pub counters: &'a Counters,
    pub feed: &'a Feed,
    pub view: &'a View,
    /// Totals of what the screen shows (the machine view leaves out aged-out sessions): an
    /// O(threads) sum, once per frame, that the header, the sidebar and the burn share.
    pub totals: Rollup,
}
