//! What `status` says of the team cache: the link to its server and this process's counts.

/// What `status` says of the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamStatus {
    /// The address without its password.
    pub target: String,
    /// Whether it answers, and why not when it does not.
    pub state: Link,
    /// Why this machine does not add to the cache, if it does not.
    pub read_only: Option<String>,
    pub vectors_pulled: u64,
    pub vectors_pushed: u64,
    pub snippets_pulled: u64,
    pub snippets_pushed: u64,
    /// Rows refused by validation (and computed here instead).
    pub rejected: u64,
    /// Seconds spent looking vectors up and adding them (waiting on the server included).
    pub pull_seconds: f64,
    pub push_seconds: f64,
}

/// How this process stands with the cache's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Connected,
    /// Reached before, with no connection open now and no failure since.
    Disconnected,
    NotContactedYet,
    /// Why it cannot be reached (the server away, the login refused, no tables to read).
    Unreachable(String),
}

/// What `status` shows: `connected`, `disconnected`, `not contacted yet`, `unreachable: …`.
impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Link::Connected => f.write_str("connected"),
            Link::Disconnected => f.write_str("disconnected"),
            Link::NotContactedYet => f.write_str("not contacted yet"),
            Link::Unreachable(reason) => write!(f, "unreachable: {reason}"),
        }
    }
}
