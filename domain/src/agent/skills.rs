//! Skills: folders with a `SKILL.md` (front matter `name` + `description`, then the body) and
//! optional `scripts/`, `references/`, `assets/`: names always, a body once loaded, files on need.

use serde::{Deserialize, Serialize};

/// Longest skill name, in bytes.
pub const MAX_SKILL_NAME_BYTES: usize = 64;
/// Longest skill description, in bytes.
pub const MAX_SKILL_DESCRIPTION_BYTES: usize = 1024;
/// Largest resource file read into the catalog.
pub const MAX_RESOURCE_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Scripts,
    References,
    Assets,
}

impl ResourceKind {
    pub const ALL: [ResourceKind; 3] = [Self::Scripts, Self::References, Self::Assets];
    pub fn dir(self) -> &'static str {
        match self {
            Self::Scripts => "scripts",
            Self::References => "references",
            Self::Assets => "assets",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    pub kind: ResourceKind,
    pub name: String,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub body: String,
    pub resources: Vec<SkillFile>,
}

/// The skills found in a directory, and the ones skipped with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillCatalog {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

impl SkillCatalog {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

/// Parses a `SKILL.md`: `---`, `name: …`, `description: …`, `---`, then the body.
pub fn parse_skill_md(text: &str) -> Result<(String, String, String), String> {
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---")
        .ok_or("SKILL.md must start with front matter between --- lines")?;
    let end = rest
        .find("\n---")
        .ok_or("the front matter has no closing --- line")?;
    let (front, body) = (&rest[..end], &rest[end + 4..]);
    let mut name = None;
    let mut description = None;
    for line in front.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!("front matter line {line:?} is not `key: value`"));
        };
        let v = v.trim().trim_matches('"').trim_matches('\'').to_string();
        match k.trim() {
            "name" => name = Some(v),
            "description" => description = Some(v),
            _ => {}
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or("the front matter has no name")?;
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or("the front matter has no description")?;
    if name.len() > MAX_SKILL_NAME_BYTES
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "name {name:?} must be one word of at most {MAX_SKILL_NAME_BYTES} bytes"
        ));
    }
    if description.len() > MAX_SKILL_DESCRIPTION_BYTES {
        return Err(format!(
            "the description is longer than {MAX_SKILL_DESCRIPTION_BYTES} bytes"
        ));
    }
    Ok((
        name,
        description,
        body.trim_start_matches(['\r', '\n']).to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_are_read() {
        let (n, d, b) = parse_skill_md(
            "---\nname: release-notes\ndescription: \"Writes notes\"\n---\n# How\nSteps.\n",
        )
        .unwrap();
        assert_eq!((n.as_str(), d.as_str()), ("release-notes", "Writes notes"));
        assert_eq!(b, "# How\nSteps.\n");
    }

    #[test]
    fn invalid_front_matter_is_refused_with_a_reason() {
        assert!(parse_skill_md("# no front matter").is_err());
        assert!(parse_skill_md("---\nname: x\n")
            .unwrap_err()
            .contains("closing"));
        assert!(parse_skill_md("---\nname: x\n---\nbody")
            .unwrap_err()
            .contains("description"));
        assert!(parse_skill_md("---\ndescription: d\n---\n")
            .unwrap_err()
            .contains("name"));
        assert!(parse_skill_md("---\nname: two words\ndescription: d\n---\n").is_err());
    }

    #[test]
    fn name_and_description_at_and_past_their_limits() {
        let ok = format!(
            "---\nname: {}\ndescription: {}\n---\n",
            "n".repeat(MAX_SKILL_NAME_BYTES),
            "d".repeat(MAX_SKILL_DESCRIPTION_BYTES)
        );
        assert!(parse_skill_md(&ok).is_ok());
        let long_name = format!(
            "---\nname: {}\ndescription: d\n---\n",
            "n".repeat(MAX_SKILL_NAME_BYTES + 1)
        );
        assert!(parse_skill_md(&long_name).is_err());
        let long_desc = format!(
            "---\nname: n\ndescription: {}\n---\n",
            "d".repeat(MAX_SKILL_DESCRIPTION_BYTES + 1)
        );
        assert!(parse_skill_md(&long_desc).is_err());
    }
}
