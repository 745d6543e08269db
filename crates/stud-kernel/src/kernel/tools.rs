//! The session's tool table: each tool's spec (from its `describe` export)
//! and its compiled argument schema, so arguments are validated in the
//! kernel before any tool code runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::tool_schema::ArgSchema;
use crate::manifest::{Capabilities, FsAccess};
use crate::mcp::tool::McpTool;
use crate::runtime::domain::ToolDefinition;
use crate::runtime::domain::ToolSpec;
use crate::runtime::{Extension, KnownSpec, SpecSource};

/// What runs a tool: a tool component, a tool of an MCP server, or the
/// kernel's `task` (delegation to a child session).
#[derive(Clone)]
pub enum ToolRunner {
    Component(Arc<Extension>),
    Mcp(Arc<McpTool>),
    Task,
    /// The kernel's `skill` tool (the skill catalogue answers it).
    Skill,
}

impl ToolRunner {
    /// Who provides it: the extension id, or `mcp:<server>`.
    pub fn owner(&self) -> String {
        match self {
            ToolRunner::Component(ext) => ext.id().to_string(),
            ToolRunner::Mcp(t) => format!("mcp:{}", t.server),
            ToolRunner::Task | ToolRunner::Skill => "kernel".to_string(),
        }
    }

    /// Whether the project brought it (a project extension, a project's
    /// MCP server): the user's own allowlist entries do not reach it.
    pub fn from_project(&self) -> bool {
        match self {
            ToolRunner::Component(ext) => ext.scope == crate::extensions::Scope::Project,
            ToolRunner::Mcp(t) => t.from_project(),
            ToolRunner::Task | ToolRunner::Skill => false,
        }
    }

    pub fn component(&self) -> Option<&Arc<Extension>> {
        match self {
            ToolRunner::Component(ext) => Some(ext),
            ToolRunner::Mcp(_) | ToolRunner::Task | ToolRunner::Skill => None,
        }
    }
}

pub struct ToolEntry {
    pub runner: ToolRunner,
    pub spec: ToolSpec,
    schema: ArgSchema,
}

impl ToolEntry {
    /// Every schema violation, one per line, or `None` if valid.
    pub fn violations(&self, args: &Value) -> Option<String> {
        self.schema.violations(&self.spec.parameters, args)
    }
}

#[derive(Default)]
pub struct ToolTable {
    tools: BTreeMap<String, Arc<ToolEntry>>,
}

impl ToolTable {
    /// Describe every tool extension. Returns the table and one warning per
    /// tool that could not be added.
    pub async fn build(exts: &[Arc<Extension>]) -> (Self, Vec<String>) {
        let mut table = ToolTable::default();
        let mut warnings = Vec::new();
        // Together: a tool whose spec is not cached yet is compiled (first
        // run), and those compiles run in parallel.
        let specs = futures::future::join_all(exts.iter().map(|e| e.tool_spec())).await;
        for (ext, spec) in exts.iter().zip(specs) {
            let KnownSpec { spec, source } = match spec {
                Ok(s) => s,
                Err(e) => {
                    warnings.push(format!("tool extension `{}` left out: {e}", ext.id()));
                    continue;
                }
            };
            if let Some(problem) =
                read_only_overreach(ext, &spec).or_else(|| name_not_its_own(ext, &spec.name))
            {
                warnings.push(problem);
                continue;
            }
            if let Some(existing) = table.tools.get(&spec.name) {
                warnings.push(format!(
                    "tool `{}` of extension `{}` left out: `{}` already provides a tool of that name",
                    spec.name,
                    ext.id(),
                    existing.runner.owner()
                ));
                continue;
            }
            let schema = match source {
                SpecSource::Binary => ArgSchema::vouched(),
                SpecSource::Cache | SpecSource::Described => {
                    match ArgSchema::compile(&spec.parameters) {
                        Ok(s) => s,
                        Err(e) => {
                            warnings.push(format!("tool `{}` left out: {e}", spec.name));
                            continue;
                        }
                    }
                }
            };
            table.tools.insert(
                spec.name.clone(),
                Arc::new(ToolEntry {
                    runner: ToolRunner::Component(ext.clone()),
                    spec,
                    schema,
                }),
            );
        }
        (table, warnings)
    }

    /// Add the tools of an MCP server; one warning per tool left out (a
    /// name taken, a schema that does not compile).
    pub fn add_mcp(&mut self, tools: Vec<(Arc<McpTool>, ToolSpec)>) -> Vec<String> {
        let mut warnings = Vec::new();
        for (tool, spec) in tools {
            if let Some(existing) = self.tools.get(&spec.name) {
                warnings.push(format!(
                    "tool `{}` of MCP server `{}` left out: `{}` already provides a tool of that name",
                    spec.name,
                    tool.server,
                    existing.runner.owner()
                ));
                continue;
            }
            let schema = match ArgSchema::compile(&spec.parameters) {
                Ok(s) => s,
                Err(e) => {
                    warnings.push(format!(
                        "tool `{}` of MCP server `{}` left out: {e}",
                        spec.name, tool.server
                    ));
                    continue;
                }
            };
            self.tools.insert(
                spec.name.clone(),
                Arc::new(ToolEntry {
                    runner: ToolRunner::Mcp(tool),
                    spec,
                    schema,
                }),
            );
        }
        warnings
    }

    /// Drop every tool of MCP server `server` (its list changed); the
    /// names dropped.
    pub fn remove_mcp(&mut self, server: &str) -> Vec<String> {
        let owner = format!("mcp:{server}");
        let gone: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, e)| e.runner.owner() == owner)
            .map(|(n, _)| n.clone())
            .collect();
        for n in &gone {
            self.tools.remove(n);
        }
        gone
    }

    /// Serve the tools of `ext`'s id with `ext` (a reloaded version):
    /// its tool is described again and replaces the old one.
    pub async fn replace(&mut self, ext: &Arc<Extension>) -> Result<(), String> {
        let (mut fresh, warnings) = ToolTable::build(std::slice::from_ref(ext)).await;
        let Some((name, entry)) = fresh.tools.pop_first() else {
            return Err(warnings.join("; "));
        };
        let old: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, e)| e.runner.owner() == ext.id().as_str())
            .map(|(n, _)| n.clone())
            .collect();
        if let Some(other) = self
            .tools
            .get(&name)
            .filter(|e| e.runner.owner() != ext.id().as_str())
        {
            return Err(format!(
                "its tool is now called `{name}`, which `{}` already provides",
                other.runner.owner()
            ));
        }
        for n in old {
            self.tools.remove(&n);
        }
        self.tools.insert(name, entry);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name).map(|e| &**e)
    }

    /// The tools `keep` keeps, sharing their entries (a child session's
    /// table: never more than this one).
    pub fn narrowed(&self, keep: impl Fn(&str) -> bool) -> ToolTable {
        ToolTable {
            tools: self
                .tools
                .iter()
                .filter(|(name, _)| keep(name))
                .map(|(n, e)| (n.clone(), e.clone()))
                .collect(),
        }
    }

    /// Serve `name` with a tool the kernel runs itself (`task`); replaces
    /// nothing: a component's tool of that name keeps it.
    pub fn add_kernel_tool(&mut self, runner: ToolRunner, spec: ToolSpec) -> Result<(), String> {
        if let Some(existing) = self.tools.get(&spec.name) {
            return Err(format!(
                "the kernel's `{}` tool left out: `{}` already provides a tool of that name",
                spec.name,
                existing.runner.owner()
            ));
        }
        let schema = ArgSchema::compile(&spec.parameters).map_err(|e| e.to_string())?;
        self.tools.insert(
            spec.name.clone(),
            Arc::new(ToolEntry {
                runner,
                spec,
                schema,
            }),
        );
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// What the provider is told about the tools.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .values()
            .map(|t| ToolDefinition {
                name: t.spec.name.clone(),
                description: t.spec.description.clone(),
                parameters: t.spec.parameters.clone(),
            })
            .collect()
    }
}

/// How every MCP tool's name starts (`mcp::tool`: `mcp__<server>__<tool>`).
const MCP_TOOL_PREFIX: &str = "mcp__";

/// A tool's name says who acts: an allowlist entry `bash:git *` means the
/// bundled shell, `mcp__github__*` a GitHub MCP server's tools, `task` the
/// kernel's delegation. A component may not take such a name unless it is
/// that bundled extension (the table is keyed by name, so whoever got the
/// name would get those approvals).
fn name_not_its_own(ext: &Extension, name: &str) -> Option<String> {
    let refused = |why: String| {
        Some(format!(
            "tool `{name}` of extension `{}` refused: {why}; give the tool a name of its own",
            ext.id()
        ))
    };
    if name.starts_with(MCP_TOOL_PREFIX) {
        return refused(format!(
            "names starting with `{MCP_TOOL_PREFIX}` are reserved for the tools of MCP servers (an allowlist entry `mcp__<server>__*` means a server)"
        ));
    }
    if name == super::agent_catalog::TASK_TOOL {
        return refused(format!("`{name}` is the kernel's delegation tool"));
    }
    if name == super::skills::SKILL_TOOL {
        return refused(format!(
            "`{name}` is the kernel's tool that loads Agent Skills"
        ));
    }
    match crate::bundled::tool_owner(name) {
        Some(owner)
            if !(ext.scope == crate::extensions::Scope::Bundled && ext.id().as_str() == owner) =>
        {
            refused(format!(
                "`{name}` is the tool of the bundled extension `{owner}` (an allowlist entry `{name}:...` means that one)"
            ))
        }
        _ => None,
    }
}

/// A tool that declares itself read-only is approved without asking in
/// `ask` mode; it may therefore hold no grant that changes anything or
/// reaches out: no processes, no writable folder, no network (manifest
/// hosts, hosts the user grants, and so the `http` import), or the
/// declaration would be a way around the approval (a "read-only" tool with
/// the network could send what it reads anywhere it reaches).
fn read_only_overreach(ext: &Extension, spec: &ToolSpec) -> Option<String> {
    if !spec.read_only {
        return None;
    }
    let line = overreaching_line(&ext.manifest.capabilities)?;
    Some(format!(
        "tool `{}` of extension `{}` refused: it declares itself read-only (so it would run without asking) but its extension.toml asks for `{line}` under [capabilities]; a read-only tool may not run processes, write files or use the network. Remove that line or stop declaring the tool read-only",
        spec.name,
        ext.id()
    ))
}

/// The first `[capabilities]` line a read-only tool may not hold, as the
/// manifest writes it.
fn overreaching_line(caps: &Capabilities) -> Option<String> {
    if caps.exec {
        return Some("exec = true".into());
    }
    if caps
        .filesystem
        .iter()
        .any(|f| f.access == FsAccess::ReadWrite)
    {
        return Some("filesystem = [{ ..., access = \"read-write\" }]".into());
    }
    if !caps.network.is_empty() {
        let hosts: Vec<String> = caps.network.iter().map(|h| format!("\"{h}\"")).collect();
        return Some(format!("network = [{}]", hosts.join(", ")));
    }
    if caps.user_hosts {
        return Some("user-hosts = true".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{FsDir, FsRequest, HostPattern};

    #[test]
    fn a_read_only_tool_may_hold_no_write_exec_or_network_grant() {
        let read = FsRequest {
            dir: FsDir::Project,
            access: FsAccess::Read,
        };
        let mut caps = Capabilities {
            filesystem: vec![read],
            ..Capabilities::default()
        };
        assert_eq!(overreaching_line(&caps), None);
        caps.user_hosts = true;
        assert_eq!(
            overreaching_line(&caps).as_deref(),
            Some("user-hosts = true")
        );
        caps.network = ["api.example.com", "*.example.org"]
            .iter()
            .map(|h| h.parse::<HostPattern>().expect("host pattern"))
            .collect();
        assert_eq!(
            overreaching_line(&caps).as_deref(),
            Some("network = [\"api.example.com\", \"*.example.org\"]")
        );
        caps.exec = true;
        assert_eq!(overreaching_line(&caps).as_deref(), Some("exec = true"));
    }
}
