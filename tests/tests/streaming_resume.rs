//! Black-box tests of streams over time, through the binding `TASKLEDGER_TEST_BINDING` names:
//! resuming with `Last-Event-ID` at every position of a long task (no gap, no duplicate, no
//! Task first), subscribers that get the same bytes (on one server, and on a second server
//! process sharing the store: SQLite file, or DynamoDB with `TASKLEDGER_TEST_STORE=dynamodb`),
//! the same events on all three bindings, and keep-alive comments while a stream waits.

use std::time::Duration;

use serde_json::json;
use taskledger_local::{Config, GrpcSettings, Storage};
use taskledger_tests::stream::{
    after, answer, assert_same, check_order, data, finish_chunked, shape, tag, until_state,
    waiting_task, with_ids, StreamEvent,
};
use taskledger_tests::{stream_timings, test_config, test_storage, Binding, Server};

/// Updates of the task a long test builds: ≥ 20 (the contract's "long task").
const LONG: usize = 20;

/// The two lists are the same bytes on the wire, event for event.
fn assert_same_bytes(a: &[StreamEvent], b: &[StreamEvent], what: &str) {
    let text = |v: &[StreamEvent]| -> Vec<String> {
        v.iter()
            .map(|e| String::from_utf8_lossy(&e.raw).into_owned())
            .collect()
    };
    let raw = |v: &[StreamEvent]| v.iter().map(|e| e.raw.clone()).collect::<Vec<_>>();
    assert!(raw(a) == raw(b), "{what}:\n{:#?}\n{:#?}", text(a), text(b));
}

fn kinds_from_working(events: &[StreamEvent]) -> Vec<String> {
    shape(events)
        .into_iter()
        .skip_while(|k| k == "statusUpdate:TASK_STATE_SUBMITTED")
        .collect()
}

// ------------------------------------------------------------------ resuming

#[tokio::test]
async fn resuming_after_any_position_gives_exactly_the_rest_of_the_sequence() {
    let s = Server::start().await;
    let ids = with_ids(&s);
    let tag = tag();
    let id = waiting_task(&s, &tag).await;
    // One subscriber reads everything live, from the Task on.
    let mut live = s.subscribe(&id).await;
    let snapshot = live.expect().await;
    assert_eq!(snapshot.kind(), "task");
    // The creation shows 3 updates (SUBMITTED, WORKING, INPUT_REQUIRED), each answer 2, the
    // chunked finish 4.
    let rounds = (LONG - 7).div_ceil(2);
    let mut reconnect = None;
    for round in 0..rounds {
        if round != rounds / 2 {
            answer(&s, &id, &tag, round).await;
            continue;
        }
        // Another reads the Task and one update, goes away, and comes back at once with the
        // last id it saw (on gRPC the id comes from a JSON-RPC twin reading the same events).
        let (mut a, mut twin) = (s.subscribe(&id).await, ids.subscribe(&id).await);
        let (a0, t0) = (a.expect().await, twin.expect().await);
        assert_eq!(
            data(&[a0]),
            data(std::slice::from_ref(&t0)),
            "two subscribers of one task"
        );
        answer(&s, &id, &tag, round).await;
        let (a1, t1) = (a.expect().await, twin.expect().await);
        assert_eq!(
            data(std::slice::from_ref(&a1)),
            data(std::slice::from_ref(&t1)),
            "two subscribers of one task"
        );
        drop((a, twin));
        let back = s.resume(&id, &t1.seq().to_string()).await.stream();
        reconnect = Some((t0.seq(), a1, back));
    }
    finish_chunked(&s, &id, &tag).await;
    let seen_live = live.rest().await;

    // The whole sequence: a resume from before the first event.
    let full = ids.resumed(&id, 0).await;
    check_order(&id, &full);
    assert!(
        full.len() >= LONG,
        "{} updates: {:?}",
        full.len(),
        shape(&full)
    );
    assert!(
        full.iter().all(|e| e.kind() != "task"),
        "a resume shows no Task"
    );
    assert_eq!(full.last().unwrap().state(), Some("TASK_STATE_COMPLETED"));

    // The live subscriber: the Task, then the log's updates after it.
    assert!(seen_live.len() < full.len());
    let tail = &full[full.len() - seen_live.len()..];
    assert_same(&seen_live, tail, "the live subscriber");
    if let Some(at) = snapshot.id {
        assert_same(&seen_live, &after(&full, at), "the live subscriber");
    }
    let before = shape(&full[..full.len() - seen_live.len()]);
    assert_eq!(
        before.last().map(String::as_str),
        Some("statusUpdate:TASK_STATE_INPUT_REQUIRED"),
        "the Task was taken while the task waited: {before:?}"
    );

    // The client that went away and came back: what it read, then the rest, once each.
    let (from, read, back) = reconnect.unwrap();
    let again: Vec<StreamEvent> = [vec![read], back.rest().await].concat();
    assert_same(&again, &after(&full, from), "the reconnected client");

    // A resume after every position, the terminal one included (an empty stream that closes),
    // and the positions of events no client sees (between the ids).
    let last = full.last().unwrap().seq();
    let mut resumed = Vec::new();
    for n in 0..=last {
        let got = s.resumed(&id, n).await;
        assert_same(&got, &after(&full, n), &format!("Last-Event-ID {n}"));
        resumed.push(got);
    }
    // What a client read up to an event, and the resume after it, are the whole sequence.
    for (k, e) in full.iter().enumerate() {
        let got = &resumed[e.seq() as usize];
        assert_eq!(
            data(&[&full[..=k], &got[..]].concat()),
            data(&full),
            "cut at {k}"
        );
    }
}

#[tokio::test]
async fn a_resume_on_a_live_task_shows_no_task_only_what_follows() {
    let s = Server::start().await;
    let tag = tag();
    let id = waiting_task(&s, &tag).await;
    // Where the task is: the last update so far (read through a binding with ids).
    let mut probe = with_ids(&s).resume(&id, "0").await.stream();
    let so_far = until_state(&mut probe, "TASK_STATE_INPUT_REQUIRED").await;
    drop(probe);
    let at = so_far.last().unwrap().seq();
    let mut r = s.resume(&id, &at.to_string()).await.stream();
    r.stays_open_for(Duration::from_millis(300)).await;
    answer(&s, &id, &tag, 0).await;
    let round = until_state(&mut r, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(
        kinds_from_working(&round),
        [
            "statusUpdate:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_INPUT_REQUIRED"
        ]
    );
    finish_chunked(&s, &id, &tag).await;
    let end = r.rest().await;
    assert_eq!(
        shape(&end).last().map(String::as_str),
        Some("statusUpdate:TASK_STATE_COMPLETED")
    );
    let all = [so_far, round, end].concat();
    check_order(&id, &all);
    assert_eq!(data(&all), data(&with_ids(&s).resumed(&id, 0).await));
}

// ------------------------------------------------------------------ several subscribers

#[tokio::test]
async fn two_subscribers_receive_byte_identical_sequences() {
    let s = Server::start().await;
    // Two subscribers of a working task (it pauses: nothing commits while they subscribe),
    // from the Task on, until it completes.
    let message = json!({"messageId": format!("test-resubscribe-message-id-{}", tag()),
                         "role": "ROLE_USER", "parts": [{"text": "work a while"}]});
    let id = s.start_task(message).await;
    s.wait_state(&id, "TASK_STATE_WORKING").await;
    let (a, b) = (s.subscribe(&id).await, s.subscribe(&id).await);
    let (ra, rb) = (a.rest().await, b.rest().await);
    assert_eq!(ra[0].kind(), "task");
    assert_same_bytes(&ra, &rb, "two subscribers of a working task");
    check_order(&id, &ra);
    assert_eq!(
        shape(&ra).last().map(String::as_str),
        Some("statusUpdate:TASK_STATE_COMPLETED")
    );

    // Two subscribers resuming from the start of a waiting task, through many updates; a
    // third goes away early, and the others do not notice.
    let tag = tag();
    let id = waiting_task(&s, &tag).await;
    let (a, b) = (
        s.resume(&id, "0").await.stream(),
        s.resume(&id, "0").await.stream(),
    );
    let mut c = s.subscribe(&id).await;
    c.expect().await;
    drop(c);
    for round in 0..3 {
        answer(&s, &id, &tag, round).await;
    }
    finish_chunked(&s, &id, &tag).await;
    let (ra, rb) = (a.rest().await, b.rest().await);
    assert_same_bytes(&ra, &rb, "two subscribers of a long task");
    check_order(&id, &ra);
    assert_eq!(
        shape(&ra).last().map(String::as_str),
        Some("statusUpdate:TASK_STATE_COMPLETED")
    );
    assert!(ra.len() >= 3 * 2 + 4, "{:?}", shape(&ra));
}

/// The store two server processes share: a SQLite file (the in-memory test store cannot be
/// shared), or the test's DynamoDB table prefix.
fn shared_storage() -> Storage {
    match test_storage() {
        Storage::Memory => Storage::Dir(
            std::env::temp_dir().join(format!("taskledger-streams-{}", uuid::Uuid::new_v4())),
        ),
        other => other,
    }
}

#[tokio::test]
async fn a_subscriber_on_a_second_server_sharing_the_store_gets_the_same_sequence() {
    let storage = shared_storage();
    let config = || {
        let mut c = test_config();
        c.storage = storage.clone();
        c.cursor_key = Some(b"streams-test-key".to_vec());
        stream_timings(&mut c, Duration::from_secs(15), Duration::from_millis(50));
        c
    };
    let one = Server::start_with(config()).await;
    let two = Server::start_with(config()).await;
    let tag = tag();
    let id = waiting_task(&one, &tag).await;
    let (mut a, mut b) = (one.subscribe(&id).await, two.subscribe(&id).await);
    // The same Task (its SSE id may differ: the agent's turn records its end, an event no
    // client sees, right after the task settles).
    let (ea, eb) = (a.expect().await, b.expect().await);
    assert_eq!(data(&[ea]), data(&[eb]), "the Task, on both servers");
    // Answered through either server; only the other's stream sees it through the store.
    answer(&one, &id, &tag, 0).await;
    answer(&two, &id, &tag, 1).await;
    answer(&one, &id, &tag, 2).await;
    finish_chunked(&one, &id, &tag).await;
    let (ra, rb) = (a.rest().await, b.rest().await);
    assert_same_bytes(&ra, &rb, "the updates, on both servers");
    check_order(&id, &rb);
    assert_eq!(
        rb.last().unwrap().state(),
        Some("TASK_STATE_COMPLETED"),
        "{:?}",
        shape(&rb)
    );
    // Resuming on the second server gives what it gives on the first.
    let full = with_ids(&one).resumed(&id, 0).await;
    for e in full.iter().step_by(3) {
        assert_same(
            &two.resumed(&id, e.seq()).await,
            &after(&full, e.seq()),
            &format!("second server, Last-Event-ID {}", e.seq()),
        );
    }
    if let Storage::Dir(dir) = &storage {
        let _ = std::fs::remove_dir_all(dir);
    }
}

// ------------------------------------------------------------------ bindings

#[tokio::test]
async fn the_three_bindings_stream_the_same_events() {
    let mut config = test_config();
    config.grpc = Some(GrpcSettings::loopback());
    let s = Server::start_with(config).await;
    let tag = tag();
    let id = waiting_task(&s, &tag).await;
    let mut subs = Vec::new();
    for b in Binding::ALL {
        subs.push(s.over(b).subscribe(&id).await);
    }
    answer(&s, &id, &tag, 0).await;
    finish_chunked(&s, &id, &tag).await;
    let mut got = Vec::new();
    for sub in subs {
        got.push(sub.rest().await);
    }
    check_order(&id, &got[0]);
    assert_eq!(data(&got[0]), data(&got[1]), "JSON-RPC and HTTP+JSON");
    assert_eq!(data(&got[0]), data(&got[2]), "JSON-RPC and gRPC");
    // The updates' ids (the Task's may differ: see the second-server test).
    let sse_ids = |v: &[StreamEvent]| v[1..].iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(sse_ids(&got[0]), sse_ids(&got[1]), "the SSE ids");
    // A resume over gRPC (metadata `last-event-id`) gives what it gives over SSE.
    let at = got[0][2].seq();
    assert_eq!(
        data(&s.over(Binding::Grpc).resumed(&id, at).await),
        data(&s.over(Binding::Rest).resumed(&id, at).await)
    );
}

// ------------------------------------------------------------------ keep-alives

#[tokio::test]
async fn a_waiting_stream_gets_keep_alive_comments() {
    assert_eq!(
        Config::in_memory()
            .with_conformance_scenarios()
            .stream_keep_alive,
        Duration::from_secs(15),
        "the default"
    );
    let mut config = test_config();
    stream_timings(
        &mut config,
        Duration::from_millis(100),
        Duration::from_millis(250),
    );
    let s = Server::start_with(config).await;
    for b in [Binding::JsonRpc, Binding::Rest] {
        let s = s.over(b);
        let tag = tag();
        let id = waiting_task(&s, &tag).await;
        let mut sub = s.subscribe(&id).await;
        sub.expect().await;
        let comments = sub.stays_open_for(Duration::from_millis(550)).await;
        assert!(
            comments.len() >= 2,
            "{}: keep-alives every 100 ms, got {comments:?}",
            b.name()
        );
        // Still a working stream: it shows what follows and closes at the end.
        finish_chunked(&s, &id, &tag).await;
        let end = sub.rest().await;
        assert_eq!(
            shape(&end).last().map(String::as_str),
            Some("statusUpdate:TASK_STATE_COMPLETED"),
            "{}",
            b.name()
        );
    }
}
