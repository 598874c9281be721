//! Claude Code (wire.md §6): session transcripts and their sub-agents' files, each lowered into
//! the facts every format shares.

mod hook;
mod local;
pub mod outcome;
pub mod partial;
pub mod sidecar;
mod skim;
pub mod stream;
mod transcript;

pub use skim::{Reading, parse_alone_into};
pub use transcript::{
    AgentResult, Block, ClaudeLine, ClaudeMessage, ProgressData, SPAWN_TOOLS, ToolInput, Usage, agent_op, blocks_of,
    lower, parse,
};
