//! Checks of A2UI messages, surfaces and actions, and the card's parameters.

use serde_json::{json, Value};

use super::*;
use crate::wire::{Part, PartContent};

fn create(surface: &str) -> Value {
    json!({"version": "v0.9", "createSurface": {"surfaceId": surface, "catalogId": BASIC_CATALOG_ID}})
}

fn components() -> Value {
    json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [
        {"id": "root", "component": "Column", "children": ["title", "ok"]},
        {"id": "title", "component": "Text", "text": "Pick a region", "variant": "h2"},
        {"id": "ok", "component": "Button", "child": "title", "action": {"event": {"name": "ok"}}}
    ]}})
}

fn err(messages: Vec<Value>) -> UiError {
    UiMessages::parse(messages).unwrap_err()
}

#[test]
fn each_of_the_four_kinds_is_accepted() {
    let all = vec![
        create("s"),
        json!({"version": "v0.9", "createSurface": {"surfaceId": "t", "catalogId": BASIC_CATALOG_ID, "theme": {"primaryColor": "#00f"}, "sendDataModel": true}}),
        components(),
        json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "/user", "value": {"name": "Ann"}}}),
        json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s"}}),
        json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"}}),
    ];
    for m in &all {
        assert!(matches_schema(m), "the whole schema agrees: {m}");
    }
    let ok = UiMessages::parse(all).unwrap();
    assert_eq!(ok.len(), 6);
    let parts = ok.parts();
    assert_eq!(parts.len(), 6, "one data part per message");
    assert!(parts
        .iter()
        .all(|p| p.media_type.as_deref() == Some(MEDIA_TYPE)));
    assert!(
        matches!(&parts[2].content, PartContent::Data(d) if d["updateComponents"]["components"][0]["id"] == "root")
    );
}

#[test]
fn a_message_needs_exactly_one_kind() {
    let e = err(vec![create("s"), json!({"version": "v0.9"})]);
    assert_eq!(e.field, "messages[1]");
    assert!(e.reason.contains("found none"), "{e}");
    let e = err(vec![
        json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "c"}, "deleteSurface": {"surfaceId": "s"}}),
    ]);
    assert_eq!(e.field, "messages[0]");
    assert!(e.reason.contains("createSurface and deleteSurface"), "{e}");
    let e = err(vec![
        json!({"version": "v0.9", "beginRendering": {"surfaceId": "s", "root": "r"}}),
    ]);
    assert_eq!(e.field, "messages[0]", "a v0.8 message is none of the four");
    let e = err(vec![json!(["not", "an", "object"])]);
    assert_eq!(e.field, "messages[0]");
}

#[test]
fn errors_name_the_message_and_the_field() {
    let cases = [
        (
            json!({"version": "v0.9", "createSurface": {"surfaceId": "s"}}),
            "messages[0].createSurface.catalogId",
        ),
        (
            json!({"createSurface": {"surfaceId": "s", "catalogId": "c"}}),
            "messages[0].version",
        ),
        (
            json!({"version": "v0.8", "deleteSurface": {"surfaceId": "s"}}),
            "messages[0].version",
        ),
        (
            json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [{"id": "root", "component": "Text"}, {"component": "Text"}]}}),
            "messages[0].updateComponents.components[1].id",
        ),
        (
            json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [{"id": "root"}]}}),
            "messages[0].updateComponents.components[0].component",
        ),
        (
            json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": []}}),
            "messages[0].updateComponents.components",
        ),
        (
            json!({"version": "v0.9", "updateDataModel": {"path": "/x", "value": 1}}),
            "messages[0].updateDataModel.surfaceId",
        ),
        (
            json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": 7}}),
            "messages[0].updateDataModel.path",
        ),
        (
            json!({"version": "v0.9", "deleteSurface": {"surfaceId": ""}}),
            "messages[0].deleteSurface.surfaceId",
        ),
        (
            json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s", "force": true}}),
            "messages[0].deleteSurface.force",
        ),
        (
            json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"}, "extra": 1}),
            "messages[0].extra",
        ),
    ];
    for (message, field) in cases {
        assert!(
            !matches_schema(&message),
            "the whole schema agrees: {message}"
        );
        assert_eq!(err(vec![message.clone()]).field, field, "{message}");
    }
    // the first bad message is the one reported
    let e = err(vec![
        create("a"),
        create("b"),
        json!({"version": "v0.9", "createSurface": {"catalogId": "c"}}),
        json!({"version": "v0.9"}),
    ]);
    assert_eq!(e.field, "messages[2].createSurface.surfaceId");
}

#[test]
fn at_most_max_ui_messages_per_call() {
    let at_limit: Vec<Value> = (0..MAX_UI_MESSAGES)
        .map(|i| create(&format!("s{i}")))
        .collect();
    assert_eq!(
        UiMessages::parse(at_limit.clone()).unwrap().len(),
        MAX_UI_MESSAGES
    );
    let mut past = at_limit;
    past.push(create("one-more"));
    let e = err(past);
    assert_eq!(e.field, "messages");
    assert!(e.reason.contains(&MAX_UI_MESSAGES.to_string()), "{e}");
    assert_eq!(err(vec![]).field, "messages");
}

#[test]
fn at_most_max_ui_bytes_per_call() {
    let with_text = |n: usize| json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "/t", "value": "x".repeat(n)}});
    let overhead = serde_json::to_vec(&vec![with_text(0)]).unwrap().len();
    let exact = vec![with_text(MAX_UI_BYTES - overhead)];
    assert_eq!(serde_json::to_vec(&exact).unwrap().len(), MAX_UI_BYTES);
    assert!(UiMessages::parse(exact).is_ok());
    let e = err(vec![with_text(MAX_UI_BYTES - overhead + 1)]);
    assert_eq!(e.field, "messages");
    assert!(e.reason.contains("bytes"), "{e}");
}

#[test]
fn the_card_names_the_basic_catalog_and_no_inline_ones() {
    let p = card_params();
    assert_eq!(p["supportedCatalogIds"][0], BASIC_CATALOG_ID);
    assert_eq!(p["acceptsInlineCatalogs"], false);
}

fn action_message(data: Value) -> crate::wire::Message {
    let mut m = crate::wire::Message::user_text("a-1", "");
    m.parts = vec![Part {
        content: PartContent::Data(data),
        metadata: None,
        filename: None,
        media_type: Some(MEDIA_TYPE.into()),
    }];
    m
}

#[test]
fn surfaces_follow_the_emitted_messages() {
    let mut s = Surfaces::default();
    s.apply(&create("s1"));
    assert!(!s.awaits_action(), "an empty surface asks nothing");
    s.apply(
        &json!({"version": "v0.9", "updateComponents": {"surfaceId": "s1", "components": [
        {"id": "t", "component": "Text", "text": "hi"},
        {"id": "b", "component": "Button", "child": "t", "action": {"event": {"name": "go"}}}]}}),
    );
    assert!(s.awaits_action());
    let on = |surface: &str, component: &str| UiAction {
        name: "go".into(),
        surface_id: surface.into(),
        component_id: component.into(),
        context: Default::default(),
    };
    assert!(s.check(&on("s1", "b")).is_ok());
    assert!(s
        .check(&on("s1", "zz"))
        .unwrap_err()
        .contains("no component"));
    assert!(s.check(&on("s2", "b")).unwrap_err().contains("no surface"));
    // The button replaced by plain text: nothing left to act on.
    s.apply(
        &json!({"version": "v0.9", "updateComponents": {"surfaceId": "s1", "components": [
        {"id": "b", "component": "Text", "text": "done"}]}}),
    );
    assert!(!s.awaits_action());
    s.apply(&json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s1"}}));
    assert!(s.is_empty());
    assert!(s.check(&on("s1", "b")).is_err());
}

#[test]
fn actions_are_read_from_a2ui_parts_in_both_shapes() {
    let a = action_of(&action_message(json!({"version": "v0.9", "action": {
        "name": "submit", "surfaceId": "s1", "sourceComponentId": "b", "context": {}}})))
    .unwrap()
    .unwrap();
    assert_eq!(a.text(), "[A2UI action] submit on surface s1 from b");
    let old = action_of(&action_message(json!({"userAction": {
        "name": "submit", "surfaceId": "s1", "sourceComponentId": "b"}})))
    .unwrap();
    assert_eq!(old.unwrap(), a);
    assert!(action_of(&action_message(json!({"action": {"name": "x"}})))
        .unwrap()
        .is_err());
    assert!(action_of(&crate::wire::Message::user_text("m", "plain")).is_none());
}

#[test]
fn the_action_name_limit_is_inclusive() {
    let named = |n: String| {
        action_of(&action_message(json!({"action": {
            "name": n, "surfaceId": "s", "sourceComponentId": "c"}})))
        .unwrap()
    };
    assert!(named("n".repeat(MAX_ACTION_NAME_BYTES)).is_ok());
    assert!(named("n".repeat(MAX_ACTION_NAME_BYTES + 1)).is_err());
    assert!(named("a\nb".into()).is_err());
}

#[test]
fn an_action_carries_its_resolved_context_to_the_agent() {
    let a = action_of(&action_message(json!({"action": {
        "name": "submit", "surfaceId": "s1", "sourceComponentId": "b",
        "context": {"email": "ada@example.com", "agree": true}}})))
    .unwrap()
    .unwrap();
    assert_eq!(
        a.text(),
        r#"[A2UI action] submit on surface s1 from b with {"agree":true,"email":"ada@example.com"}"#
    );
    let not_object = action_of(&action_message(json!({"action": {
        "name": "submit", "surfaceId": "s1", "sourceComponentId": "b", "context": ["x"]}})));
    assert!(not_object
        .unwrap()
        .unwrap_err()
        .contains("must be an object"));
}

#[test]
fn the_action_context_limit_is_inclusive() {
    // {"k":"<n>"} is n + 8 bytes of JSON.
    let sized = |n: usize| {
        action_of(&action_message(json!({"action": {
            "name": "go", "surfaceId": "s", "sourceComponentId": "c",
            "context": {"k": "v".repeat(n)}}})))
        .unwrap()
    };
    assert!(sized(MAX_ACTION_CONTEXT_BYTES - 8).is_ok());
    assert!(sized(MAX_ACTION_CONTEXT_BYTES - 7)
        .unwrap_err()
        .contains("over"));
}
