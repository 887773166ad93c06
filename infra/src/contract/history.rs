//! Contract case for a history longer than the head's tail (ADR 029): the rows hold what the
//! tail let go of, the tail the rest, and every view reads the two as one history, in order.

use std::sync::Arc;

use taskledger_domain::ids::{HistoryLength, PageSize};
use taskledger_domain::ports::{ListQuery, ViewOptions};
use taskledger_domain::task::{RECENT_BYTES, RECENT_MESSAGES};
use taskledger_domain::wire::Message;

use super::{alice, append_cmd, create_task, run, Store};

pub async fn a_history_past_the_tail_reads_whole_and_in_order<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-long", "c").await;
    // The creation's message, more than the tail keeps, one message over the tail's byte bound
    // (it empties the tail), then a few after it.
    let mut texts = vec![history_texts(&*store, &id, HistoryLength::All).await[0].clone()];
    let mut say = |text: String| {
        texts.push(text.clone());
        text
    };
    for i in 0..RECENT_MESSAGES + 3 {
        let text = say(format!("m{i}"));
        run(&*store, &id, append_cmd(&format!("m-{i}"), &text))
            .await
            .expect("append");
    }
    let big = say("x".repeat(RECENT_BYTES + 1));
    run(&*store, &id, append_cmd("m-big", &big))
        .await
        .expect("append");
    for i in 0..3 {
        let text = say(format!("after{i}"));
        run(&*store, &id, append_cmd(&format!("m-after-{i}"), &text))
            .await
            .expect("append");
    }
    let total = texts.len();
    assert_eq!(history_texts(&*store, &id, HistoryLength::All).await, texts);
    for n in [1, 3, 4, 5, RECENT_MESSAGES, total - 1, total, total + 5] {
        let want = &texts[total.saturating_sub(n)..];
        assert_eq!(
            history_texts(&*store, &id, HistoryLength::Last(n as u32)).await,
            want,
            "the last {n}"
        );
    }
    // A list asking for exact histories reads them the same way.
    let query = ListQuery {
        scope: Default::default(),
        context_id: None,
        state: None,
        status_after: None,
        finished_before: None,
        after: None,
        page_size: PageSize::parse(Some(10)).expect("size"),
        view: ViewOptions::exact(HistoryLength::All, false),
    };
    let page = store.list(&alice(), &query).await.expect("list");
    let listed = page
        .tasks
        .iter()
        .find(|v| v.head.id == id)
        .expect("the task is listed");
    assert_eq!(texts_of(listed.history.clone()), texts);
}

async fn history_texts<S: Store + ?Sized>(
    store: &S,
    id: &taskledger_domain::ids::TaskId,
    history: HistoryLength,
) -> Vec<String> {
    let view = store
        .get(&alice(), id, ViewOptions::exact(history, false))
        .await
        .expect("get")
        .expect("visible");
    texts_of(view.history)
}

fn texts_of(history: Option<Vec<Message>>) -> Vec<String> {
    history
        .unwrap_or_default()
        .iter()
        .map(Message::text)
        .collect()
}
