//! Slash commands: the registry of command extensions and their dispatch.
//! A command never starts a turn. While it runs it may read the session
//! and ask for kernel actions through the `session` import; the
//! dispatcher holds the session for the command's whole run and applies
//! each request in order, so mutations are serialised. A turn-safe
//! command typed while a turn runs works on a snapshot instead
//! (`turn_view`).
//! Command components are instantiated at their first use, not at start.

mod actions;
mod bridge;
pub mod catalogue;
mod network;
mod rediscover;
mod turn_view;
mod views;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

pub use super::input::{Input, classify};
pub use bridge::Bridge;
use catalogue::{Catalogue, Entry, Resolved};
use turn_view::Access;
pub use turn_view::TurnView;

use super::events::Bus;
use super::interaction::{Answer, Interactions};
use super::md_commands::MarkdownCommands;
use super::session::Session;
use crate::extensions::{Discovered, ProjectScope, Registry, Scope};
use crate::paths::StudHome;
use crate::runtime::domain::CommandArgs;
use crate::runtime::domain::{Choice, InteractionKind, InteractionStatus};
use crate::runtime::{CallError, Extension};
use stud_protocol::events::{CommandStatus, KernelEvent};

/// The kernel's command that lists the Agent Skills in scope.
pub const SKILLS_COMMAND: &str = "/skills";

/// How a dispatch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Failed,
    /// Not run: not turn-safe while a turn runs, or not chosen.
    Refused,
}

impl Status {
    /// The word events carry.
    pub fn word(self) -> CommandStatus {
        match self {
            Status::Ok => CommandStatus::Ok,
            Status::Failed => CommandStatus::Failed,
            Status::Refused => CommandStatus::Refused,
        }
    }
}

/// Why a command that is not turn-safe was refused.
fn busy(command: &str) -> String {
    format!(
        "{command} cannot run while a turn is running; run it when the turn has ended (Esc stops the turn)"
    )
}

/// What the program does once the command returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    Continue,
    /// End the program; the session stays saved.
    Exit,
    /// End this session and go on in a new, empty one.
    NewSession,
    /// End this session and continue the saved one with this id.
    Resume(String),
}

#[derive(Debug)]
pub struct Dispatched {
    pub status: Status,
    /// What the person sees.
    pub text: String,
    pub after: After,
}

impl Dispatched {
    fn error(text: String) -> Self {
        Dispatched {
            status: Status::Failed,
            text,
            after: After::Continue,
        }
    }
}

/// Where commands are found and what they act on besides the session.
pub struct CommandEnv {
    /// The Agent Skills in scope (`/skills` lists them).
    pub skills: Arc<super::skills::SkillCatalog>,
    pub home: StudHome,
    /// The project folder (the session's working directory).
    pub cwd: std::path::PathBuf,
    pub project: ProjectScope,
    /// Every extension discovery accepted (for the network and trust views).
    pub found: Vec<Discovered>,
    /// Every extension loaded at start (the extensions view, provider switch).
    pub loaded: Vec<Arc<Extension>>,
}

pub struct Commands {
    catalogue: Catalogue,
    /// Markdown commands (prompt templates), under the components.
    markdown: MarkdownCommands,
    /// `commands.<id>` from settings (with the kernel's keys).
    settings: HashMap<String, Value>,
    registry: Arc<Registry>,
    /// Command components instantiated so far, by id.
    instances: HashMap<String, Arc<Extension>>,
    /// Those the session's metering has not taken up yet (loaded while a
    /// turn ran, when the session was not at hand).
    unmetered: Vec<Arc<Extension>>,
    bridge: Arc<Bridge>,
    bus: Bus,
    interactions: Arc<Interactions>,
    env: CommandEnv,
}

impl Commands {
    /// The registry and a warning for each command left out.
    pub fn new(
        env: CommandEnv,
        settings: HashMap<String, Value>,
        registry: Arc<Registry>,
        bridge: Arc<Bridge>,
        bus: Bus,
        interactions: Arc<Interactions>,
    ) -> (Self, Vec<String>) {
        let (catalogue, mut warnings) = Catalogue::build(&env.found, &settings);
        let taken = catalogue
            .entries()
            .iter()
            .flat_map(|e| std::iter::once(&e.name).chain(&e.aliases))
            .map(ToString::to_string)
            .collect();
        let (markdown, more) = MarkdownCommands::load(
            env.home.root(),
            crate::paths::user_home().as_deref(),
            &env.cwd,
            &env.project,
            &taken,
        );
        warnings.extend(more);
        (
            Commands {
                catalogue,
                markdown,
                settings,
                registry,
                instances: HashMap::new(),
                unmetered: Vec::new(),
                bridge,
                bus,
                interactions,
                env,
            },
            warnings,
        )
    }

    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// The kernel's own commands a component has not taken.
    fn kernel_commands(&self) -> impl Iterator<Item = stud_protocol::events::CommandInfo> + '_ {
        let info = |name: &str, description: &str| stud_protocol::events::CommandInfo {
            name: name.into(),
            argument_hint: None,
            description: description.into(),
        };
        // `/copy` and `/plan` are always the kernel's (the front door
        // answers them); `/skills` unless a component took the name.
        let skills =
            (!matches!(self.catalogue.resolve(SKILLS_COMMAND), Resolved::One(_))).then(|| {
                info(
                    SKILLS_COMMAND,
                    "List the Agent Skills the model can load, and where each is from.",
                )
            });
        [
            info(crate::kernel::terminal_signals::COPY, "Put the last answer on the clipboard (OSC 52)."),
            info(
                crate::kernel::rewind::UNDO,
                "Take back the files the last turn changed (shell commands' changes too); asks first.",
            ),
            info(
                crate::kernel::rewind::REWIND,
                "Go back to before a turn (Esc Esc): its files, the conversation, or both.",
            ),
            info(
                crate::kernel::plan_mode::PLAN_COMMAND,
                "Plan mode on or off (Shift-Tab): read-only tools and a plan; leaving it asks whether to carry the plan out.",
            ),
        ]
        .into_iter()
        .chain(skills)
    }

    /// The Markdown commands (prompt templates) of this session.
    pub fn markdown(&self) -> &MarkdownCommands {
        &self.markdown
    }

    /// Tell UIs which commands there are (for completion).
    pub fn announce(&self) {
        self.bus.record(KernelEvent::CommandsAvailable {
            commands: self
                .catalogue
                .entries()
                .iter()
                .flat_map(|e| {
                    std::iter::once(&e.name)
                        .chain(e.aliases.iter())
                        .map(move |n| stud_protocol::events::CommandInfo {
                            name: n.to_string(),
                            argument_hint: e.argument_hint.clone(),
                            description: e.description.clone(),
                        })
                })
                .chain(self.kernel_commands())
                .chain(
                    self.markdown
                        .all()
                        .map(|c| stud_protocol::events::CommandInfo {
                            name: c.name.clone(),
                            argument_hint: c.argument_hint.clone(),
                            description: c.description.clone(),
                        }),
                )
                .collect(),
        });
    }

    /// Run the command a line names. `turn_running`: only turn-safe
    /// commands run then.
    pub async fn dispatch(
        &mut self,
        name: &str,
        args: CommandArgs,
        session: &mut Session,
        turn_running: bool,
    ) -> Dispatched {
        self.dispatch_with(name, args, Access::Live(session), turn_running)
            .await
    }

    /// The command components loaded so far (retired with the session).
    pub fn loaded(&self) -> impl Iterator<Item = &Arc<Extension>> {
        self.instances.values()
    }

    /// The snapshot turn-safe commands read while the turn about to start
    /// runs.
    pub fn turn_view(&self, session: &Session) -> TurnView {
        TurnView::of(views::overview(self, session), session)
    }

    /// Run a command typed while a turn runs: only a turn-safe one runs
    /// (the rest are refused), on `view` instead of the busy session.
    pub async fn dispatch_during_turn(
        &mut self,
        name: &str,
        args: CommandArgs,
        view: &TurnView,
    ) -> Dispatched {
        self.dispatch_with(name, args, Access::Turn(view), true)
            .await
    }

    async fn dispatch_with(
        &mut self,
        name: &str,
        args: CommandArgs,
        access: Access<'_>,
        turn_running: bool,
    ) -> Dispatched {
        let entry = match self.catalogue.resolve(name) {
            Resolved::One(e) => e.clone(),
            // The kernel's own listing, unless a component took the name.
            Resolved::Unknown { .. } if name == SKILLS_COMMAND => {
                let started = Instant::now();
                let text = super::skills::listing(&self.env.skills);
                self.resulted(name, "kernel", Status::Ok, &text, started);
                return Dispatched {
                    status: Status::Ok,
                    text,
                    after: After::Continue,
                };
            }
            Resolved::Unknown { suggestions } => {
                let hint = match suggestions.as_slice() {
                    [] => String::new(),
                    [one] => format!("did you mean {one}? "),
                    many => format!("did you mean one of {}? ", many.join(", ")),
                };
                let text = format!(
                    "unknown command {name}; {hint}/help lists the commands (nothing was sent to the model; start with // to send text that begins with /)"
                );
                self.resulted(name, "", Status::Failed, &text, Instant::now());
                return Dispatched::error(text);
            }
            Resolved::Ambiguous(candidates) => {
                let candidates: Vec<Entry> = candidates.into_iter().cloned().collect();
                match self.choose(name, &candidates).await {
                    Ok(e) => e,
                    Err(text) => {
                        self.resulted(name, "", Status::Refused, &text, Instant::now());
                        return Dispatched {
                            status: Status::Refused,
                            text,
                            after: After::Continue,
                        };
                    }
                }
            }
        };
        let started = Instant::now();
        let command = entry.name.to_string();
        let id = entry.id().to_string();
        if turn_running && !entry.turn_safe {
            let text = busy(&command);
            self.resulted(&command, &id, Status::Refused, &text, started);
            return Dispatched {
                status: Status::Refused,
                text,
                after: After::Continue,
            };
        }
        self.bus.publish(KernelEvent::CommandDispatched {
            name: name.to_string(),
            command: command.clone(),
            extension: id.clone(),
            arguments: args.raw.clone(),
        });
        let mut access = access;
        let out = match self.instance(&entry).await {
            Ok(ext) => {
                if let Access::Live(session) = &mut access {
                    for e in self.unmetered.drain(..) {
                        session.metering.join(&e);
                    }
                }
                self.run(&ext, entry.scope, args, access).await
            }
            Err(text) => Dispatched::error(text),
        };
        self.resulted(&command, &id, out.status, &out.text, started);
        out
    }

    fn resulted(&self, command: &str, id: &str, status: Status, text: &str, started: Instant) {
        self.bus.record(KernelEvent::CommandResulted {
            command: command.to_string(),
            extension: id.to_string(),
            status: status.word(),
            message: text.to_string(),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
    }

    /// Several commands answer to `name`: the person picks one.
    async fn choose(&self, name: &str, candidates: &[Entry]) -> Result<Entry, String> {
        let options: Vec<String> = candidates
            .iter()
            .map(|e| {
                format!(
                    "{} ({}, {} scope): {}",
                    e.name,
                    e.id(),
                    e.scope,
                    e.description
                )
            })
            .collect();
        let listed = options.join("; ");
        let kind = InteractionKind::Select(Choice {
            prompt: format!("{name} names several commands; which one?"),
            options: options.clone(),
        });
        match self.interactions.request(kind).await {
            Answer::Response(r) if r.status == InteractionStatus::Accepted => {
                let at = r
                    .value
                    .as_ref()
                    .and_then(|v| options.iter().position(|o| o == v));
                at.and_then(|i| candidates.get(i).cloned())
                    .ok_or_else(|| format!("{name} is ambiguous ({listed}); none was chosen"))
            }
            _ => Err(format!(
                "{name} is ambiguous: {listed}; nothing was run. Give one an alias of its own in settings (commands.<id>.alias)"
            )),
        }
    }

    /// The command's instance: loaded (and its digest checked) at first
    /// use, and its `describe` checked against the manifest.
    async fn instance(&mut self, entry: &Entry) -> Result<Arc<Extension>, String> {
        if let Some(ext) = self.instances.get(entry.id()) {
            return Ok(ext.clone());
        }
        let config = catalogue::extension_config(self.settings.get(entry.id()));
        let spec = self
            .registry
            .spec(&entry.found, config)
            .map_err(|e| e.to_string())?;
        let runtime = self.registry.runtime.clone();
        let ext = tokio::task::spawn_blocking(move || runtime.load(spec))
            .await
            .map_err(|e| format!("loading `{}` failed: {e}", entry.id()))?
            .map_err(|e| e.to_string())?;
        let spec = ext.command_describe().await.map_err(|e| e.to_string())?;
        if spec.name != entry.name.as_str() {
            return Err(format!(
                "extension `{}` says its command is `{}` but its extension.toml declares {}; make them agree and reinstall it",
                entry.id(),
                spec.name,
                entry.name
            ));
        }
        let ext = Arc::new(ext);
        self.instances.insert(entry.id().to_string(), ext.clone());
        self.unmetered.push(ext.clone());
        Ok(ext)
    }

    /// Run `execute`, answering the command's session requests while it
    /// runs.
    async fn run(
        &mut self,
        ext: &Arc<Extension>,
        scope: Scope,
        args: CommandArgs,
        mut access: Access<'_>,
    ) -> Dispatched {
        let mut open = self.bridge.open(ext.id().clone());
        let call = {
            let ext = ext.clone();
            async move { ext.command_execute(&args).await }
        };
        tokio::pin!(call);
        let mut after = After::Continue;
        let result = loop {
            tokio::select! {
                out = &mut call => break out,
                Some(pending) = open.requests.recv() => {
                    let answer = self.answer(ext.id().as_str(), scope, pending.request, &mut access, &mut after).await;
                    let _ = pending.reply.send(answer);
                }
            }
        };
        drop(open);
        match result {
            Ok(out) => Dispatched {
                status: Status::Ok,
                text: out.rendered,
                after,
            },
            Err(e) => Dispatched {
                status: Status::Failed,
                // A command's own error is written for the person; a trap
                // or timeout names the extension.
                text: match e {
                    CallError::Guest { error, .. } => error.message,
                    other => other.to_string(),
                },
                after,
            },
        }
    }
}
