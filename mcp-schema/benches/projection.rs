//! Cost per tool of projection, header extraction and validation, and the per-request cost of a
//! cached projection (a read lock, a hash and an `Arc` clone).
//!
//! Run with `cargo bench -p everymcp-schema --bench projection`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_schema::{
    ProjectionCache, SchemaProfile, ToolProjection, Validator, extract_headers, project_input,
    project_output,
};
use serde_json::{Value, json};

/// A tool schema the size schemars writes for a struct of a dozen fields, two nested types,
/// an `Option` of each and a documented enum.
fn input_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "DeployArgs",
        "type": "object",
        "properties": {
            "service": {"type": "string", "description": "Service name", "minLength": 1},
            "region": {"type": "string", "x-mcp-header": "Region"},
            "replicas": {"type": ["integer", "null"], "format": "uint16", "minimum": 0, "maximum": 100},
            "strategy": {"anyOf": [{"$ref": "#/$defs/Strategy"}, {"type": "null"}]},
            "image": {"$ref": "#/$defs/Image", "description": "Container image"},
            "env": {"type": "array", "items": {"$ref": "#/$defs/EnvVar"}, "default": []},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "dry_run": {"type": "boolean", "default": false, "x-mcp-header": "Dry-Run"},
            "timeout_s": {"type": "integer", "minimum": 1, "default": 300},
            "notes": {"type": ["string", "null"]},
            "canary": {"anyOf": [{"$ref": "#/$defs/Canary"}, {"type": "null"}]},
            "priority": {"type": "integer", "enum": [1, 2, 3]}
        },
        "required": ["service", "region", "image"],
        "$defs": {
            "Strategy": {"oneOf": [
                {"const": "rolling", "type": "string", "description": "One at a time"},
                {"const": "blue_green", "type": "string", "description": "Switch at once"},
                {"const": "recreate", "type": "string", "description": "Stop, then start"}
            ]},
            "Image": {
                "type": "object",
                "properties": {"repo": {"type": "string"}, "tag": {"type": "string", "pattern": "^[a-z0-9.-]+$"}},
                "required": ["repo", "tag"],
                "additionalProperties": false
            },
            "EnvVar": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                "required": ["name", "value"]
            },
            "Canary": {
                "type": "object",
                "properties": {"percent": {"type": "integer", "minimum": 1, "maximum": 50}, "steps": {"type": "integer"}},
                "required": ["percent"]
            }
        }
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "deployment": {"type": "string"},
            "status": {"$ref": "#/$defs/Status"},
            "pods": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "ready": {"type": "boolean"}}}}
        },
        "required": ["deployment", "status"],
        "$defs": {"Status": {"type": "string", "enum": ["pending", "running", "failed"]}}
    })
}

fn valid_arguments() -> Value {
    json!({
        "service": "web", "region": "eu-west-1", "replicas": 3, "strategy": "rolling",
        "image": {"repo": "registry/web", "tag": "1.4.2"},
        "env": [{"name": "MODE", "value": "prod"}, {"name": "LOG", "value": "info"}],
        "labels": {"team": "core"}, "dry_run": false, "canary": {"percent": 10}
    })
}

fn invalid_arguments() -> Value {
    json!({
        "service": "", "region": "eu-west-1", "replicas": 1000, "strategy": "yolo",
        "image": {"repo": "registry/web", "tag": "Bad Tag", "extra": 1},
        "env": [{"name": "MODE"}], "priority": 9
    })
}

fn projection(c: &mut Criterion) {
    let input = input_schema();
    let output = output_schema();
    let mut group = c.benchmark_group("projection per tool");
    for (revision, profile) in [
        ("2025-03-26", SchemaProfile::V2025_03_26),
        ("2025-06-18", SchemaProfile::V2025_06_18),
        ("2026-07-28", SchemaProfile::V2026_07_28),
    ] {
        group.bench_function(format!("project_input {revision}"), |b| {
            b.iter(|| project_input(black_box(&input), &profile));
        });
        group.bench_function(format!("project_output {revision}"), |b| {
            b.iter(|| project_output(black_box(&output), &profile));
        });
    }
    group.bench_function("extract_headers", |b| {
        b.iter(|| extract_headers(black_box(&input)))
    });
    group.finish();
}

fn cached(c: &mut Criterion) {
    let input = input_schema();
    let output = output_schema();
    let cache = ProjectionCache::new();
    // A registry of 50 tools, projected for every revision.
    for i in 0..50 {
        for profile in [
            SchemaProfile::V2024_11_05,
            SchemaProfile::V2025_06_18,
            SchemaProfile::V2025_11_25,
            SchemaProfile::V2026_07_28,
        ] {
            cache.get_or_project(&format!("tool-{i}"), &profile, &input, Some(&output));
        }
    }
    let mut group = c.benchmark_group("per request");
    group.bench_function("cache hit (get)", |b| {
        b.iter(|| cache.get(black_box("tool-37"), &SchemaProfile::V2025_06_18));
    });
    group.bench_function("cache hit (get_or_project)", |b| {
        b.iter(|| {
            cache.get_or_project(
                black_box("tool-37"),
                &SchemaProfile::V2025_06_18,
                &input,
                Some(&output),
            )
        });
    });
    group.bench_function("uncached (ToolProjection::compute)", |b| {
        b.iter(|| {
            ToolProjection::compute(
                black_box(&input),
                Some(&output),
                &SchemaProfile::V2025_06_18,
            )
        });
    });
    group.finish();
}

fn validation(c: &mut Criterion) {
    let input = input_schema();
    let validator = Validator::compile(&input).expect("compiles");
    let valid = valid_arguments();
    let invalid = invalid_arguments();
    assert!(validator.validate(&valid).is_ok());
    assert!(validator.validate(&invalid).is_err());
    let mut group = c.benchmark_group("validation");
    group.bench_function("compile (once per tool)", |b| {
        b.iter(|| Validator::compile(black_box(&input)));
    });
    group.bench_function("validate valid arguments", |b| {
        b.iter(|| validator.validate(black_box(&valid)));
    });
    group.bench_function("validate invalid arguments (issues listed)", |b| {
        b.iter(|| validator.validate(black_box(&invalid)));
    });
    group.finish();
}

criterion_group!(benches, projection, cached, validation);
criterion_main!(benches);
