//! Reading figures only (`stats`, `tree`, `ps`) gives what reading every record whole gives, but
//! an item's text: the same `stats --json` and tree, one record at a time or fed on every core,
//! with the tool outputs of Claude Code transcripts never decoded.

use std::path::PathBuf;

use swarmtop::commands::stats::render_json;
use swarmtop::commands::tree::render_tree;
use swarmtop::feed;
use swarmtop::model::{ItemKind, ItemStatus};
use swarmtop::pipeline::{Config, Pipeline};
use swarmtop::router::Event;
use swarmtop::source::files::{self, Input};
use swarmtop::source::merge::{Merged, Timing};
use swarmtop::wire::Reading;

fn fixtures(paths: &[&str]) -> Vec<Input> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    files::expand(&paths.iter().map(|p| root.join(p)).collect::<Vec<_>>()).expect("fixtures are there")
}

fn one_by_one(inputs: &[Input], config: Config) -> Pipeline {
    let mut pipeline = Pipeline::new(config);
    let mut merged = Merged::open(inputs, Timing::default()).expect("open");
    // A damaged input (the truncated `.gz` of hostile/) ends the stream there, as in `ingest`.
    while let Ok(Some((record, origin))) = merged.next_record() {
        pipeline.feed(record, origin, &mut |_: &Event<'_, '_>| {});
    }
    pipeline.finish();
    pipeline
}

fn on_every_core(inputs: &[Input], config: Config) -> Pipeline {
    let mut pipeline = Pipeline::new(config);
    if let Err(f) = feed::feed(inputs, Timing::default(), 2, 4096, &mut pipeline, &mut |_: &Event<'_, '_>| {}) {
        assert_eq!(f.doing, "reading", "{f:?}");
    }
    pipeline.finish();
    pipeline
}

/// Bytes of text the model keeps for the outputs of tool calls that did not fail (a failed one's
/// text is its reason, read for figures too: the run store keeps it).
fn tool_output_bytes(pipeline: &Pipeline) -> usize {
    let tools = [ItemKind::Command, ItemKind::DynamicTool, ItemKind::McpTool, ItemKind::FileChange];
    let items = pipeline.model.threads.iter().flat_map(|t| &t.items);
    items.filter(|i| tools.contains(&i.kind) && i.status != ItemStatus::Failed).map(|i| i.text.len()).sum()
}

/// The figures and the tree of both readings agree; returns the two pipelines.
fn same_figures(paths: &[&str]) -> (Pipeline, Pipeline) {
    let inputs = fixtures(paths);
    let whole = one_by_one(&inputs, Config::default());
    assert_eq!(whole.router.decodes(), Reading::Whole);
    let stats = render_json(&whole);
    let tree = render_tree(&whole.model);
    for figures in
        [one_by_one(&inputs, Config::default().figures()), on_every_core(&inputs, Config::default().figures())]
    {
        assert_eq!(figures.router.decodes(), Reading::Figures);
        assert_eq!(render_json(&figures), stats, "stats --json of {paths:?}");
        assert_eq!(render_tree(&figures.model), tree, "tree of {paths:?}");
    }
    (whole, on_every_core(&inputs, Config::default().figures()))
}

#[test]
fn claude_transcripts_give_the_same_figures_without_their_tool_outputs() {
    let (whole, figures) = same_figures(&["tests/fixtures/claude-2.1.39"]);
    // What it saves: the session's tool outputs are read whole, and not at all for figures.
    assert!(tool_output_bytes(&whole) > 100_000, "{}", tool_output_bytes(&whole));
    assert_eq!(tool_output_bytes(&figures), 0);
    // Prompts are still read: a root is named by its first one.
    let root = figures.model.sessions[0];
    assert_eq!(swarmtop::ui::label::of(&figures.model, root).name, swarmtop::ui::label::of(&whole.model, root).name);
}

#[test]
fn codex_captures_and_rollouts_give_the_same_figures() {
    same_figures(&["tests/fixtures/codex-0.171.0"]);
}

#[test]
fn hostile_and_mixed_inputs_give_the_same_figures() {
    same_figures(&["tests/fixtures/hostile", "tests/fixtures/tee", "tests/fixtures/claude-2.1.332-otlp"]);
}
