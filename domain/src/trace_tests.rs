use super::*;

const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_version_00_traceparent_is_read_and_written_back_the_same() {
    let c = TraceContext::parse(GOOD, None).unwrap();
    assert_eq!(c.traceparent(), GOOD);
    assert_eq!(c.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(c.sampled());
    let unsampled = TraceContext::parse(&GOOD.replace("-01", "-00"), None).unwrap();
    assert!(!unsampled.sampled());
    assert_eq!(TraceContext::from_stored(&c.to_stored()), Some(c));
}

#[test]
fn anything_else_is_no_context_and_never_an_error() {
    let bad = [
        "",
        "garbage",
        // Unknown or invalid versions.
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        // Uppercase hex, zero ids, short fields, an extra field.
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-011",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
    ];
    for b in bad {
        assert_eq!(TraceContext::parse(b, None), None, "{b:?}");
    }
}

#[test]
fn a_traceparent_is_exactly_its_length_and_one_more_byte_is_refused() {
    assert_eq!(GOOD.len(), TRACEPARENT_LEN);
    assert!(TraceContext::parse(GOOD, None).is_some());
    assert_eq!(TraceContext::parse(&format!("{GOOD}1"), None), None);
    assert_eq!(TraceContext::parse(&"0".repeat(100_000), None), None);
}

#[test]
fn a_bad_or_oversized_tracestate_is_dropped_and_the_traceparent_kept() {
    let kept = TraceContext::parse(GOOD, Some("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7")).unwrap();
    assert_eq!(
        kept.tracestate(),
        Some("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7")
    );
    assert_eq!(
        TraceContext::from_stored(&kept.to_stored())
            .unwrap()
            .tracestate(),
        kept.tracestate()
    );
    for bad in ["no-equals", "UPPER=1", "a=", "=b", "a=b=c", ","] {
        let c = TraceContext::parse(GOOD, Some(bad)).unwrap();
        assert_eq!(c.tracestate(), None, "{bad:?}");
        assert_eq!(c.traceparent(), GOOD);
    }
    // Members: 32 kept, 33 dropped.
    let members = |n: usize| {
        (0..n)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert!(
        TraceContext::parse(GOOD, Some(&members(MAX_TRACESTATE_MEMBERS)))
            .unwrap()
            .tracestate()
            .is_some()
    );
    assert!(
        TraceContext::parse(GOOD, Some(&members(MAX_TRACESTATE_MEMBERS + 1)))
            .unwrap()
            .tracestate()
            .is_none()
    );
    // Bytes: 512 kept, 513 dropped (spread over members: a value is at most 256 bytes).
    let spread = |n: usize| {
        let mut s = String::new();
        let mut i = 0;
        while s.len() < n {
            if !s.is_empty() {
                s.push(',');
            }
            s.push_str(&format!("k{i}="));
            i += 1;
            while s.len() < n && !s.ends_with(&"v".repeat(200)) {
                s.push('v');
            }
        }
        s
    };
    let (fits, over) = (
        spread(MAX_TRACESTATE_BYTES),
        spread(MAX_TRACESTATE_BYTES + 1),
    );
    assert_eq!(
        (fits.len(), over.len()),
        (MAX_TRACESTATE_BYTES, MAX_TRACESTATE_BYTES + 1)
    );
    assert!(TraceContext::parse(GOOD, Some(&fits))
        .unwrap()
        .tracestate()
        .is_some());
    assert!(TraceContext::parse(GOOD, Some(&over))
        .unwrap()
        .tracestate()
        .is_none());
}

#[test]
fn children_keep_the_trace_and_roots_never_have_zero_ids() {
    let c = TraceContext::parse(GOOD, Some("a=1")).unwrap();
    let child = c.child([7; 8]);
    assert_eq!(child.trace_id(), c.trace_id());
    assert_eq!(child.span_id(), [7; 8]);
    assert_eq!(child.tracestate(), Some("a=1"));
    let root = TraceContext::root([0; 16], [0; 8]);
    assert!(TraceContext::parse(&root.traceparent(), None).is_some());
}

#[test]
fn the_origin_is_kept_with_the_work_and_only_its_own_receiver_gets_the_trace() {
    let alice = crate::ids::Principal::new("acme", "alice").unwrap();
    let bob = crate::ids::Principal::new("acme", "bob").unwrap();
    let t = TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("vendor=account-42"),
    )
    .unwrap()
    .with_origin(Some(alice.clone()));
    let stored = t.to_stored();
    assert!(stored.ends_with("\nacme/alice"), "{stored}");
    let back = TraceContext::from_stored(&stored).unwrap();
    assert_eq!(back, t);
    assert_eq!(back.origin(), Some(&alice));
    assert_eq!(back.to_receiver(Some(&alice)), Some(&t));
    assert_eq!(back.to_receiver(Some(&bob)), None, "another principal");
    assert_eq!(back.to_receiver(None), None, "a provider");
    // A context stored before origins were kept reaches nobody but is still read.
    let old = TraceContext::from_stored("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .unwrap();
    assert_eq!(old.origin(), None);
    assert_eq!(old.to_receiver(Some(&alice)), None);
}
