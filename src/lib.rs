//! swarmtop: the `htop` of agent swarms.
//!
//! The data flows one way through the stages, each a folder with a small public face:
//! `source` (bytes + arrival time) → `wire` (decode) → `router` (routing.md reducer) → `model`
//! (threads, items, tokens, cost) → `ui` (ratatui) and `export` (OTLP traces). `pipeline` joins
//! wire, router and model for every consumer, and `feed` runs it on every core for recorded inputs;
//! `store` keeps every run for `history`, `report` and `search`;
//! `commands` are the thin edges (CLI, headless output, the monitor loop); `act` decides what to stop
//! (guards, interrupts) from the model.

pub mod act;
pub mod commands;
pub mod export;
pub mod feed;
pub mod model;
pub mod pipeline;
pub mod router;
pub mod source;
pub mod store;
pub mod ui;
pub mod wire;
