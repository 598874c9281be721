//! Claude Code (wire.md §6): session transcripts and their sub-agents' files, each lowered into
//! the facts every format shares.

mod cursor;
mod hook;
mod local;
pub mod outcome;
pub mod partial;
pub mod sidecar;
mod skim;
pub mod stream;
mod transcript;

pub use transcript::{
    AgentResult, Block, ClaudeLine, ClaudeMessage, ProgressData, SPAWN_TOOLS, ToolInput, Usage, blocks_of,
    is_spawn_tool, lower, parse, parse_alone_into,
};
