//! Loads the skill catalog from a directory (one folder per skill).
//!
//! A folder whose `SKILL.md` has invalid front matter is skipped and reported; resources over the
//! size limit or not UTF-8 are skipped and reported too.

use std::path::Path;

use taskledger_domain::agent::skills::{
    parse_skill_md, ResourceKind, Skill, SkillCatalog, SkillFile, MAX_RESOURCE_BYTES,
};

pub fn load_catalog(dir: &Path) -> SkillCatalog {
    let mut catalog = SkillCatalog::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        catalog.problems.push(format!(
            "cannot read the skills directory {}",
            dir.display()
        ));
        return catalog;
    };
    let mut folders: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let md = folder.join("SKILL.md");
        let text = match std::fs::read_to_string(&md) {
            Ok(t) => t,
            Err(e) => {
                catalog.problems.push(format!("{}: {e}", md.display()));
                continue;
            }
        };
        let (name, description, body) = match parse_skill_md(&text) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(skill = %folder.display(), error = %e, "skill skipped");
                catalog.problems.push(format!("{}: {e}", md.display()));
                continue;
            }
        };
        if catalog.get(&name).is_some() {
            catalog.problems.push(format!(
                "{}: a skill named {name} already exists",
                md.display()
            ));
            continue;
        }
        let mut resources = Vec::new();
        for kind in ResourceKind::ALL {
            let Ok(files) = std::fs::read_dir(folder.join(kind.dir())) else {
                continue;
            };
            let mut files: Vec<_> = files
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for f in files {
                let file_name = f
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                match std::fs::metadata(&f) {
                    Ok(m) if m.len() as usize > MAX_RESOURCE_BYTES => {
                        catalog.problems.push(format!(
                            "{}: larger than {MAX_RESOURCE_BYTES} bytes",
                            f.display()
                        ));
                        continue;
                    }
                    Err(e) => {
                        catalog.problems.push(format!("{}: {e}", f.display()));
                        continue;
                    }
                    _ => {}
                }
                match std::fs::read_to_string(&f) {
                    Ok(content) => resources.push(SkillFile {
                        kind,
                        name: file_name,
                        content,
                    }),
                    Err(_) => catalog
                        .problems
                        .push(format!("{}: not UTF-8 text", f.display())),
                }
            }
        }
        catalog.skills.push(Skill {
            name,
            description,
            body,
            resources,
        });
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_load_with_resources_and_bad_ones_are_skipped_and_reported() {
        let dir = std::env::temp_dir().join(format!("taskledger-skills-{}", uuid::Uuid::new_v4()));
        let good = dir.join("notes");
        std::fs::create_dir_all(good.join("references")).unwrap();
        std::fs::write(
            good.join("SKILL.md"),
            "---\nname: notes\ndescription: Writes notes\n---\nUse the template.",
        )
        .unwrap();
        std::fs::write(good.join("references/template.md"), "## Notes").unwrap();
        let bad = dir.join("broken");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("SKILL.md"), "no front matter").unwrap();
        let c = load_catalog(&dir);
        assert_eq!(c.skills.len(), 1);
        assert_eq!(c.skills[0].resources[0].name, "template.md");
        assert_eq!(c.problems.len(), 1);
        assert!(c.problems[0].contains("broken"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_skills_packaged_with_the_worker_are_valid() {
        // `skills/` is the worker's skills layer (template.yaml, mounted at /opt).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
        let c = load_catalog(&dir);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert!(c.skills.iter().any(|s| s.name == "status-report"));
    }
}
