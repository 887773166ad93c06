//! A custom agent written against the agent port (issue 52, item 4): the example crate's
//! `Greeter` (functions/example-agent) built into the local server — it greets a name with an
//! artifact, asks when no name is given and greets the answer; the task around it is
//! taskledger's (history, streams, its status as any other).

use serde_json::json;
use taskledger_app::compose::{AgentChoice, CustomAgent};
use taskledger_tests::{test_config, Server};

async fn server() -> Server {
    let mut config = test_config();
    config.agent = AgentChoice::Custom(CustomAgent(
        taskledger_example_agent::greeter(),
        "greeter".into(),
    ));
    Server::start_with(config).await
}

#[tokio::test]
async fn the_greeter_greets_a_name_and_asks_for_one_when_none_is_given() {
    let s = server().await;
    let t = s.send_task("m-1", "Ada").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "hello, Ada");
    let t = s.send_task("m-2", " ").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "Who should I greet?"
    );
    let id = t["id"].as_str().unwrap();
    let answer = s
        .send("m-3", "Grace", json!({"taskId": id}), json!({}))
        .await;
    let t = &answer["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "hello, Grace");
}

#[tokio::test]
async fn a_name_is_bounded_at_its_limit_and_asked_again_one_past_it() {
    let s = server().await;
    let at = "n".repeat(taskledger_example_agent::MAX_NAME_CHARS);
    let t = s.send_task("m-1", &at).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let past = "n".repeat(taskledger_example_agent::MAX_NAME_CHARS + 1);
    let t = s.send_task("m-2", &past).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
}
