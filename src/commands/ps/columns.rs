//! `ps`'s columns: one record per column (its `-o` / `--sort` name, header, alignment, how much it
//! may give way), so the table, `-o` and `--sort` never disagree. How rows compare in each is
//! [`super::order`]'s (the command line's parsers know no rows).

use crate::commands::table::{Cut, Spec};

/// A column of the text table, by its `-o` / `--sort` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Agent,
    Id,
    Project,
    Source,
    State,
    Last,
    Pid,
    Cpu,
    Mem,
    Agents,
    Tokens,
    Cost,
    Name,
}

/// What the table shows without `-o`: every column but the source (`-o …,source` or `--json`
/// have it), the name last as `ps` puts the command.
pub const DEFAULT: [Column; 12] = [
    Column::Agent,
    Column::Id,
    Column::Project,
    Column::State,
    Column::Last,
    Column::Pid,
    Column::Cpu,
    Column::Mem,
    Column::Agents,
    Column::Tokens,
    Column::Cost,
    Column::Name,
];

const ALL: [Column; 13] = [
    Column::Agent,
    Column::Id,
    Column::Project,
    Column::Source,
    Column::State,
    Column::Last,
    Column::Pid,
    Column::Cpu,
    Column::Mem,
    Column::Agents,
    Column::Tokens,
    Column::Cost,
    Column::Name,
];

impl Column {
    pub fn name(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Id => "id",
            Self::Project => "project",
            Self::Source => "source",
            Self::State => "state",
            Self::Last => "last",
            Self::Pid => "pid",
            Self::Cpu => "cpu",
            Self::Mem => "mem",
            Self::Agents => "agents",
            Self::Tokens => "tokens",
            Self::Cost => "cost",
            Self::Name => "name",
        }
    }

    pub fn header(self) -> &'static str {
        match self {
            Self::Agent => "AGENT",
            Self::Id => "ID",
            Self::Project => "PROJECT",
            Self::Source => "SOURCE",
            Self::State => "STATE",
            Self::Last => "LAST",
            Self::Pid => "PID",
            Self::Cpu => "CPU%",
            Self::Mem => "MEM",
            Self::Agents => "AGENTS",
            Self::Tokens => "TOKENS",
            Self::Cost => "COST",
            Self::Name => "NAME",
        }
    }

    /// Figures align right, words left.
    pub fn right_aligned(self) -> bool {
        matches!(self, Self::Pid | Self::Cpu | Self::Mem | Self::Agents | Self::Tokens | Self::Cost | Self::Last)
    }

    /// How the column gives way when the table is wider than the terminal, and the fewest columns
    /// it keeps when it does.
    pub fn cut(self) -> (Cut, usize) {
        match self {
            Self::Project | Self::Source => (Cut::Head, 10),
            // `…` and the id's last eight characters.
            Self::Id => (Cut::Head, 9),
            Self::Name => (Cut::Tail, 12),
            _ => (Cut::Never, 0),
        }
    }

    /// The column as the table lays it out.
    pub fn spec(self) -> Spec {
        let (cut, floor) = self.cut();
        Spec { header: self.header(), right: self.right_aligned(), cut, floor, keep: self.keep_rank() }
    }

    /// Which columns leave first when even cut to their fewest the table does not fit: the lower,
    /// the sooner. The source first (`--json` has it), then the process's figures; the agent, the
    /// session's state, its size and its cost stay longest.
    pub fn keep_rank(self) -> u8 {
        match self {
            Self::Source => 0,
            Self::Cpu => 1,
            Self::Mem => 2,
            Self::Last => 3,
            Self::Pid => 4,
            Self::Project => 5,
            Self::Id => 6,
            Self::Agents => 7,
            Self::Name => 8,
            Self::Tokens => 9,
            Self::Cost => 10,
            Self::State => 11,
            Self::Agent => 12,
        }
    }
}

fn names() -> String {
    ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
}

fn column(name: &str) -> Result<Column, String> {
    let name = name.trim().to_ascii_lowercase();
    // The names `ps` users type for the same columns.
    let name = match name.as_str() {
        "pcpu" | "%cpu" | "cpu%" => "cpu",
        "rss" | "pmem" | "%mem" | "memory" => "mem",
        "tool" => "agent",
        "time" | "lastactivity" => "last",
        other => other,
    };
    ALL.iter().copied().find(|c| c.name() == name).ok_or_else(|| format!("no column {name:?} (one of: {})", names()))
}

/// `-o`'s columns, in order (one value to clap: a list is not one value per flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns(pub Vec<Column>);

/// `--sort`'s keys, the first deciding (one value to clap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKeys(pub Vec<SortKey>);

/// `-o agent,id,cost`: the columns to show, in that order.
pub fn parse_columns(s: &str) -> Result<Columns, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let c = column(part)?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(format!("no columns given (some of: {})", names()));
    }
    Ok(Columns(out))
}

/// One `--sort` key: a column, and whether largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub column: Column,
    pub descending: bool,
}

/// `--sort -cost,name`: as `ps` reads it, `-KEY` largest (newest) first, `KEY` or `+KEY` smallest
/// first; later keys break ties.
pub fn parse_sort(s: &str) -> Result<SortKeys, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (descending, name) = match part.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, part.strip_prefix('+').unwrap_or(part)),
        };
        out.push(SortKey { column: column(name)?, descending });
    }
    if out.is_empty() {
        return Err(format!("no sort key given (one of: {})", names()));
    }
    Ok(SortKeys(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::table::render;
    use crate::ui::text::width;

    #[test]
    fn columns_and_keys_parse_as_ps_users_type_them() {
        assert_eq!(parse_columns("agent,COST,pcpu").unwrap().0, [Column::Agent, Column::Cost, Column::Cpu]);
        assert!(parse_columns("agent,bogus").unwrap_err().contains("one of: agent, id, project"));
        assert!(parse_columns(",").is_err());
        let keys = parse_sort("-cost,+name").unwrap().0;
        assert_eq!(keys[0], SortKey { column: Column::Cost, descending: true });
        assert_eq!(keys[1], SortKey { column: Column::Name, descending: false });
        assert!(parse_sort("").is_err());
    }

    #[test]
    fn every_column_has_its_own_name_header_and_rank() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
                assert_ne!(a.header(), b.header());
                assert_ne!(a.keep_rank(), b.keep_rank());
            }
        }
    }

    fn specs(columns: &[Column]) -> Vec<Spec> {
        columns.iter().map(|c| c.spec()).collect()
    }

    fn row(project: &str, name: &str, pid: &str) -> Vec<String> {
        let cells = [
            "claude",
            "4d5611e5-241a-462a-8d15-5122611a9569",
            project,
            "live",
            "3s",
            pid,
            "12.4",
            "181.0M",
            "2",
            "1,234,567",
            "$12.34",
            name,
        ];
        cells.iter().map(|c| (*c).to_owned()).collect()
    }

    /// At 80 columns a long project gives way before any figure: agents, tokens and cost stay.
    #[test]
    fn the_longest_column_gives_way_first() {
        let project = "~/src/work/clients/acme/platform/services/billing-reconciliation-worker";
        let rows = vec![row(project, "Fix the flaky reconciliation test in the nightly job", "4121")];
        let text = render(&specs(&DEFAULT), &rows, Some(80));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| width(l) <= 80), "{text}");
        for col in ["AGENT", "ID", "PROJECT", "STATE", "AGENTS", "TOKENS", "COST", "NAME"] {
            assert!(lines[0].contains(col), "{col} at 80 columns:\n{text}");
        }
        assert!(lines[1].contains("1,234,567") && lines[1].contains("$12.34"), "{text}");
        let id = lines[1].split_whitespace().nth(1).unwrap();
        assert!(
            id.starts_with('…') && id.len() < 36 && "4d5611e5-241a-462a-8d15-5122611a9569".ends_with(&id[3..]),
            "{text}"
        );
        assert!(lines[0].contains("PID"), "a live session's pid stays at 80 columns: {text}");
        assert!(lines[1].contains("worker"), "a path keeps its last folder: {text}");
        // Piped: whole.
        let piped = render(&specs(&DEFAULT), &rows, None);
        assert!(piped.contains(project) && piped.contains("4d5611e5-241a-462a-8d15-5122611a9569"), "{piped}");
    }

    #[test]
    fn a_narrow_terminal_drops_the_least_telling_columns() {
        let rows = vec![row("~/p", "name", "4121")];
        let text = render(&specs(&DEFAULT), &rows, Some(50));
        assert!(text.lines().all(|l| width(l) <= 50), "{text}");
        let header = text.lines().next().unwrap();
        assert!(header.contains("COST") && header.contains("STATE") && !header.contains("CPU%"), "{text}");
    }
}
