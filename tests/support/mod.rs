//! Test support for running the real `codex app-server` offline: a mock of the Responses API, a scripted
//! multi-agent scenario, a stdio client that keeps every byte, and readers for recordings and traffic.
//! Shared by `tests/e2e_codex.rs` and the demo recorder (`examples/record_demo.rs`); the same for the real
//! Claude Code CLI against a mock of the Anthropic Messages API (`anthropic`, `claude_*`, `tests/e2e_claude.rs`).

// Each user compiles this module on its own and uses a different part of it.
#![allow(dead_code)]

pub mod anthropic;
pub mod chat_completions;
pub mod claude_driver;
pub mod claude_scenario;
pub mod codex_driver;
pub mod follower;
pub mod harness;
pub mod ingest;
pub mod mock_model;
pub mod opencode;
pub mod recording;
pub mod responses;
pub mod scenario;
pub mod traffic;
