//! Surfaces folded from artifacts and drawn with their data bound.

use serde_json::{json, Value};
use taskledger_domain::wire::Artifact;

use super::model;
use super::render as render_with;
use crate::board::urls::ImageOrigins;

fn render(artifacts: &[Artifact], may_act: bool) -> maud::Markup {
    render_with(artifacts, may_act, &ImageOrigins::default())
}

fn artifact(parts: Vec<Value>) -> Artifact {
    serde_json::from_value(json!({
        "artifactId": "a2ui:9",
        "name": "a2ui",
        "parts": parts.into_iter().map(|d| json!({"data": d, "mediaType": "application/a2ui+json"})).collect::<Vec<_>>()
    }))
    .unwrap()
}

#[test]
fn a_surface_is_drawn_from_its_root_with_buttons_that_send_their_action() {
    let a = artifact(vec![
        json!({"createSurface": {"surfaceId": "s1", "catalogId": "basic"}}),
        json!({"updateComponents": {"surfaceId": "s1", "components": [
            {"id": "root", "component": "Column", "children": ["t", "b", "img", "f"]},
            {"id": "img", "component": "Image", "url": "data:image/png;base64,AA==", "altText": "a dot"},
            {"id": "f", "component": "TextField", "label": "Name"},
            {"id": "t", "component": "Text", "text": "Pick <one>"},
            {"id": "l", "component": "Text", "text": {"literalString": "OK"}},
            {"id": "b", "component": "Button", "child": "l", "action": {"event": {"name": "ok"}}}
        ]}}),
    ]);
    let html = render(std::slice::from_ref(&a), true).into_string();
    assert!(html.contains("Pick &lt;one&gt;"), "escaped: {html}");
    assert!(
        html.contains(r#"data-surface="s1" data-component="b" data-name="ok""#),
        "{html}"
    );
    assert!(html.contains(">OK<"));
    assert!(
        html.contains(r#"alt="a dot""#) && html.contains("Name"),
        "{html}"
    );
    // Someone who may not act sees the button, disabled, and no form to send.
    let watching = render(&[a], false).into_string();
    assert!(!watching.contains("data-rpc") && watching.contains("disabled"));
    // a deleted surface is gone
    let gone = artifact(vec![
        json!({"createSurface": {"surfaceId": "s2"}}),
        json!({"deleteSurface": {"surfaceId": "s2"}}),
    ]);
    assert!(render(&[gone], true).into_string().is_empty());
}

#[test]
fn bindings_read_the_data_model_and_a_button_names_the_context_it_sends() {
    let a = artifact(vec![
        json!({"createSurface": {"surfaceId": "s"}}),
        json!({"updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["hello", "email", "agree", "size", "go", "items"]},
            {"id": "hello", "component": "Text", "text": {"call": "formatString", "args": {"value": "Hi ${/user/name}!"}}},
            {"id": "email", "component": "TextField", "label": "Email", "value": {"path": "/user/email"}},
            {"id": "agree", "component": "CheckBox", "label": "Agree", "value": {"path": "/user/agree"}},
            {"id": "size", "component": "ChoicePicker", "label": "Size", "value": {"path": "/size"},
             "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}]},
            {"id": "go-label", "component": "Text", "text": "Go"},
            {"id": "go", "component": "Button", "child": "go-label", "action": {"event": {"name": "submit",
                "context": {"email": {"path": "/user/email"}, "source": "form"}}}},
            {"id": "items", "component": "List", "children": {"componentId": "item", "path": "/items"}},
            {"id": "item", "component": "Text", "text": {"path": "title"}}
        ]}}),
        json!({"updateDataModel": {"surfaceId": "s", "value": {"user": {"name": "Ada"}, "items": [{"title": "one"}]}}}),
        json!({"updateDataModel": {"surfaceId": "s", "path": "/user/email", "value": "ada@example.com"}}),
        json!({"updateDataModel": {"surfaceId": "s", "path": "/user/agree", "value": true}}),
        json!({"updateDataModel": {"surfaceId": "s", "path": "/size", "value": ["l"]}}),
        json!({"updateDataModel": {"surfaceId": "s", "path": "/items/1", "value": {"title": "two"}}}),
    ]);
    let html = render(&[a], true).into_string();
    assert!(html.contains(">Hi Ada!<"), "{html}");
    assert!(
        html.contains(r#"value="ada@example.com" data-path="/user/email""#),
        "{html}"
    );
    assert!(
        html.contains(r#"checked data-path="/user/agree""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<option value="l" selected>Large"#),
        "{html}"
    );
    assert!(
        html.contains(r#"data-bound="/items/0/title">one<"#)
            && html.contains(r#"data-bound="/items/1/title">two<"#),
        "a List template is drawn per item with relative paths: {html}"
    );
    assert!(
        html.contains("data-context=\"{&quot;email&quot;:{&quot;path&quot;:&quot;/user/email&quot;,&quot;value&quot;:&quot;ada@example.com&quot;},&quot;source&quot;:{&quot;value&quot;:&quot;form&quot;}}\""),
        "{html}"
    );
}

#[test]
fn the_data_model_follows_pointers_and_removals() {
    let mut d = Value::Null;
    model::set(&mut d, "/a/b", Some(json!(1)));
    model::set(&mut d, "/a/c~1d", Some(json!([1])));
    model::set(&mut d, "/a/c~1d/-", Some(json!(2)));
    assert_eq!(d, json!({"a": {"b": 1, "c/d": [1, 2]}}));
    model::set(&mut d, "/a/b", None);
    model::set(&mut d, "/a/c~1d/0", None);
    model::set(&mut d, "/a/c~1d/9", Some(json!(3))); // past the end: ignored
    assert_eq!(d, json!({"a": {"c/d": [2]}}));
    model::set(&mut d, "/", Some(json!({"x": true})));
    assert_eq!(d, json!({"x": true}));
    let deep = format!("{}/z", "/k".repeat(model::MAX_POINTER_TOKENS));
    model::set(&mut d, &deep, Some(json!(1)));
    assert_eq!(
        d,
        json!({"x": true}),
        "a pointer past the bound changes nothing"
    );
    let at_bound = "/k".repeat(model::MAX_POINTER_TOKENS);
    model::set(&mut d, &at_bound, Some(json!(1)));
    assert_eq!(d.pointer(&at_bound), Some(&json!(1)));
}

#[test]
fn a_cycle_of_components_stops_at_the_depth_bound() {
    let a = artifact(vec![
        json!({"createSurface": {"surfaceId": "s"}}),
        json!({"updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Card", "child": "root"}
        ]}}),
    ]);
    assert!(render(&[a], true).into_string().contains("<pre>"));
}

#[test]
fn a_list_template_draws_at_most_its_bound_of_items() {
    let drawn = |n: usize| {
        let a = artifact(vec![
            json!({"createSurface": {"surfaceId": "s"}}),
            json!({"updateComponents": {"surfaceId": "s", "components": [
                {"id": "root", "component": "List", "children": {"componentId": "i", "path": "/xs"}},
                {"id": "i", "component": "Text", "text": {"path": "n"}}
            ]}}),
            json!({"updateDataModel": {"surfaceId": "s", "path": "/xs",
                "value": (0..n).map(|k| json!({"n": k})).collect::<Vec<_>>()}}),
        ]);
        render(&[a], true)
            .into_string()
            .matches("a2ui-text")
            .count()
    };
    use super::draw::MAX_LIST_ITEMS;
    assert_eq!(drawn(MAX_LIST_ITEMS), MAX_LIST_ITEMS);
    assert_eq!(drawn(MAX_LIST_ITEMS + 1), MAX_LIST_ITEMS);
}

#[test]
fn a_surface_that_draws_itself_four_times_over_is_cut_at_the_node_budget() {
    // The render bomb: a Column whose children are itself four times (the domain refuses it at
    // emit; drawn anyway, the board stays within its budget).
    let a = artifact(vec![
        json!({"createSurface": {"surfaceId": "s"}}),
        json!({"updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["root", "root", "root", "root"]}
        ]}}),
    ]);
    let started = std::time::Instant::now();
    let html = render(&[a], true).into_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    let columns = html.matches("a2ui-column").count();
    assert!(columns <= super::draw::MAX_DRAWN_NODES, "{columns}");
    assert!(html.len() < 1 << 20, "{} bytes", html.len());
}

#[test]
fn the_node_budget_draws_exactly_its_bound() {
    let drawn = |n: usize| {
        let ids: Vec<String> = (0..n).map(|_| "t".to_string()).collect();
        let a = artifact(vec![
            json!({"createSurface": {"surfaceId": "s"}}),
            json!({"updateComponents": {"surfaceId": "s", "components": [
                {"id": "root", "component": "Column", "children": ids},
                {"id": "t", "component": "Text", "text": "x"}
            ]}}),
        ]);
        let html = render(&[a], true).into_string();
        (html.matches("a2ui-text").count(), html.contains("a2ui-cut"))
    };
    use super::draw::MAX_DRAWN_NODES;
    // The root is one node: its children fill the rest of the budget.
    assert_eq!(drawn(MAX_DRAWN_NODES - 1), (MAX_DRAWN_NODES - 1, false));
    let (texts, cut) = drawn(MAX_DRAWN_NODES);
    assert_eq!(texts, MAX_DRAWN_NODES - 1);
    assert!(cut);
}

#[test]
fn media_and_images_follow_the_url_rule() {
    let a = artifact(vec![
        json!({"createSurface": {"surfaceId": "s"}}),
        json!({"updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["v", "au", "ok", "pix", "inline", "js"]},
            {"id": "v", "component": "Video", "url": "javascript:alert(1)", "description": "watch"},
            {"id": "au", "component": "AudioPlayer", "url": " JAVASCRIPT:alert(1)"},
            {"id": "ok", "component": "Video", "url": "https://media.example.com/v.mp4", "description": "a video"},
            {"id": "pix", "component": "Image", "url": "https://tracker.example/p.gif", "altText": "pixel"},
            {"id": "inline", "component": "Image", "url": "data:image/png;base64,AA==", "altText": "dot"},
            {"id": "js", "component": "Image", "url": "javascript:alert(1)", "altText": "bad"}
        ]}}),
    ]);
    let html = render(std::slice::from_ref(&a), true).into_string();
    assert!(
        !html.to_ascii_lowercase().contains("href=\"javascript"),
        "{html}"
    );
    assert!(
        !html.to_ascii_lowercase().contains("src=\"javascript"),
        "{html}"
    );
    assert!(
        html.contains(r#"href="https://media.example.com/v.mp4""#),
        "{html}"
    );
    assert!(
        !html.contains(r#"src="https://tracker.example"#),
        "not fetched: {html}"
    );
    assert!(
        html.contains(r#"href="https://tracker.example/p.gif""#),
        "offered as a link: {html}"
    );
    assert!(
        html.contains(r#"src="data:image/png;base64,AA==""#),
        "{html}"
    );
    let allowed = ImageOrigins::parse("https://tracker.example").unwrap();
    let html = render_with(&[a], true, &allowed).into_string();
    assert!(
        html.contains(r#"src="https://tracker.example/p.gif""#),
        "{html}"
    );
}

#[test]
fn only_artifacts_emit_ui_made_are_drawn() {
    let mut a = artifact(vec![
        json!({"createSurface": {"surfaceId": "s"}}),
        json!({"updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Text", "text": "hello"}
        ]}}),
    ]);
    assert!(render(std::slice::from_ref(&a), true)
        .into_string()
        .contains("hello"));
    a.name = Some("report".into());
    assert!(render(&[a], true).into_string().is_empty());
}
