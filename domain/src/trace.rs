//! W3C Trace Context (`traceparent`, `tracestate`): the trace a request belongs to, recorded
//! with the events its commands append and carried with every piece of work after the commit
//! (agent turns, webhook deliveries), so one trace follows a task across processes.
//!
//! Only version `00` — the one the recommendation defines — is read; a header of any other
//! version, malformed (not lowercase hex, a zero id) or of any length but `TRACEPARENT_LEN` is no context
//! at all: the request starts a new trace, and is never
//! refused for it. A `tracestate` past `MAX_TRACESTATE_BYTES` or `MAX_TRACESTATE_MEMBERS`, or
//! not a list of `key=value` members, is dropped and the `traceparent` kept (§3.3.1.1).

/// A version-00 `traceparent` is exactly this long (`00-<32 hex>-<16 hex>-<2 hex>`).
pub const TRACEPARENT_LEN: usize = 55;
/// The longest `tracestate` kept (the recommendation's minimum to propagate).
pub const MAX_TRACESTATE_BYTES: usize = 512;
/// The most `tracestate` list members kept.
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    /// The span this context names as the parent of what follows.
    span_id: [u8; 8],
    sampled: bool,
    state: Option<String>,
    /// Whose request the trace came with (kept with the work, never sent): only what goes back
    /// to that principal carries the trace on (`to_receiver`).
    origin: Option<crate::ids::Principal>,
}

fn hex_bytes<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != N * 2
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A `tracestate` as kept: at most 32 members of `key=value`, at most 512 bytes.
fn valid_state(s: &str) -> bool {
    if s.len() > MAX_TRACESTATE_BYTES {
        return false;
    }
    let members: Vec<&str> = s
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect();
    !members.is_empty()
        && members.len() <= MAX_TRACESTATE_MEMBERS
        && members.iter().all(|m| {
            let Some((key, value)) = m.split_once('=') else {
                return false;
            };
            let key_ok = !key.is_empty()
                && key.len() <= 256
                && key
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
            let value_ok = !value.is_empty()
                && value.len() <= 256
                && value
                    .bytes()
                    .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
                && !value.ends_with(' ');
            key_ok && value_ok
        })
}

impl TraceContext {
    /// The context of a request's headers; `None` (a new trace) when `traceparent` is absent
    /// or not one this reads.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        if traceparent.len() != TRACEPARENT_LEN {
            return None;
        }
        let mut fields = traceparent.split('-');
        let (version, trace, span, flags) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        if version != "00" || fields.next().is_some() {
            return None;
        }
        let trace_id = hex_bytes::<16>(trace).filter(|t| t.iter().any(|b| *b != 0))?;
        let span_id = hex_bytes::<8>(span).filter(|s| s.iter().any(|b| *b != 0))?;
        let [flags] = hex_bytes::<1>(flags)?;
        let state = tracestate
            .map(str::trim)
            .filter(|s| valid_state(s))
            .map(str::to_string);
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            state,
            origin: None,
        })
    }

    /// A new trace (ids from the caller's randomness: the domain draws none), sampled.
    pub fn root(trace_id: [u8; 16], span_id: [u8; 8]) -> Self {
        let mut trace_id = trace_id;
        if trace_id.iter().all(|b| *b == 0) {
            trace_id[15] = 1;
        }
        Self {
            trace_id,
            span_id: nonzero(span_id),
            sampled: true,
            state: None,
            origin: None,
        }
    }

    /// The same trace, with `span_id` as the parent of what follows.
    pub fn child(&self, span_id: [u8; 8]) -> Self {
        Self {
            span_id: nonzero(span_id),
            ..self.clone()
        }
    }

    /// Made from ids another tracer holds (an OpenTelemetry span's), keeping this `tracestate`.
    pub fn from_ids(trace_id: [u8; 16], span_id: [u8; 8], sampled: bool) -> Option<Self> {
        (trace_id.iter().any(|b| *b != 0) && span_id.iter().any(|b| *b != 0)).then_some(Self {
            trace_id,
            span_id,
            sampled,
            state: None,
            origin: None,
        })
    }

    /// The same trace, as `who`'s request brought it.
    pub fn with_origin(mut self, who: Option<crate::ids::Principal>) -> Self {
        self.origin = who;
        self
    }

    pub fn origin(&self) -> Option<&crate::ids::Principal> {
        self.origin.as_ref()
    }

    /// What of this trace may go with work to `receiver` (a webhook's principal): all of it
    /// when the receiver is whose request brought it, else nothing — another principal (or a
    /// provider, `None`) starts a trace of its own, and sees neither the trace id nor the
    /// caller's `tracestate` (vendor members carry account ids).
    pub fn to_receiver(&self, receiver: Option<&crate::ids::Principal>) -> Option<&Self> {
        (receiver.is_some() && self.origin.as_ref() == receiver).then_some(self)
    }

    pub fn with_state(mut self, state: Option<String>) -> Self {
        self.state = state.filter(|s| valid_state(s));
        self
    }

    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    pub fn sampled(&self) -> bool {
        self.sampled
    }

    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The `traceparent` header naming this context.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            u8::from(self.sampled)
        )
    }

    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// One string to store beside events and in queue messages: the `traceparent`, then the
    /// `tracestate` after a space (neither contains one but `tracestate`'s optional spaces
    /// around commas, which `parse` trims), then the origin on a line of its own.
    pub fn to_stored(&self) -> String {
        let mut out = match &self.state {
            Some(s) => format!("{} {s}", self.traceparent()),
            None => self.traceparent(),
        };
        if let Some(o) = &self.origin {
            out.push('\n');
            out.push_str(&o.to_string());
        }
        out
    }

    /// What `to_stored` wrote; anything else is no context.
    pub fn from_stored(s: &str) -> Option<Self> {
        let (context, origin) = match s.split_once('\n') {
            Some((c, o)) => (
                c,
                o.split_once('/')
                    .and_then(|(t, sub)| crate::ids::Principal::new(t, sub).ok()),
            ),
            None => (s, None),
        };
        let parsed = match context.split_once(' ') {
            Some((parent, state)) => Self::parse(parent, Some(state)),
            None => Self::parse(context, None),
        };
        parsed.map(|c| c.with_origin(origin))
    }
}

fn nonzero(mut id: [u8; 8]) -> [u8; 8] {
    if id.iter().all(|b| *b == 0) {
        id[7] = 1;
    }
    id
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
