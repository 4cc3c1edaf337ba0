//! Property tests over generated schemas and instances.
//!
//! Schemas are generated as a `Shape` tree (plain types plus the decorations the projection
//! rules handle: `$ref`, nullable unions, value unions, `allOf` splits, `unevaluatedProperties`,
//! conditionals, real unions, annotations), then written as JSON Schema 2020-12. Instances are
//! generated from the same tree, mostly valid, sometimes not.

use crate::common;

use std::collections::BTreeSet;

use mcp_schema::{
    Dialect, HeaderAnnotationError, NotOfferedReason, Projection, SchemaProfile, Validator,
    ValidatorOptions, extract_headers, project_input,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

#[derive(Clone, Debug)]
enum NullStyle {
    AnyOf,
    OneOf,
    TypeList,
}

#[derive(Clone, Debug)]
enum Shape {
    Str {
        min_len: Option<u8>,
        choices: Option<Vec<String>>,
    },
    Int {
        min: Option<i8>,
        max: Option<i8>,
    },
    Num,
    Bool,
    Null,
    Any,
    Arr(Box<Self>),
    Obj {
        props: Vec<(String, Self, bool)>,
        closed: bool,
    },
    /// `Option<T>`: null added by `anyOf`, `oneOf` or a type list.
    Nullable(Box<Self>, NullStyle),
    /// Moved to `$defs`, referenced with a `description` sibling.
    Ref(Box<Self>),
    /// An open object whose properties are split across two `allOf` branches.
    Split(Vec<(String, Self, bool)>),
    /// An object whose properties sit in a `$ref`'d part, closed by `unevaluatedProperties`.
    Unevaluated(Vec<(String, Self, bool)>),
    /// `anyOf`/`oneOf` of `const`s (distinct values).
    Values(Vec<i64>, bool),
    /// An object with `if`/`then` (dropped on legacy revisions: widening).
    Conditional(Vec<(String, Self, bool)>),
    /// A union of a string and an integer (not offered on legacy revisions).
    RealUnion,
    /// Annotations, including an `x-mcp-header` (stripped on legacy revisions).
    Annotated(Box<Self>),
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "d", "e"]).prop_map(str::to_owned)
}

fn props(inner: BoxedStrategy<Shape>) -> impl Strategy<Value = Vec<(String, Shape, bool)>> {
    prop::collection::btree_map(name(), (inner, any::<bool>()), 0..4)
        .prop_map(|m| m.into_iter().map(|(k, (s, r))| (k, s, r)).collect())
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        (
            prop::option::of(0u8..3),
            prop::option::of(prop::collection::vec("[a-c]{0,2}", 1..3))
        )
            .prop_map(|(min_len, choices)| Shape::Str { min_len, choices }),
        (prop::option::of(-5i8..5), prop::option::of(-5i8..5))
            .prop_map(|(min, max)| Shape::Int { min, max }),
        Just(Shape::Num),
        Just(Shape::Bool),
        Just(Shape::Null),
        Just(Shape::Any),
        (prop::collection::btree_set(-3i64..4, 1..4), any::<bool>())
            .prop_map(|(v, one_of)| Shape::Values(v.into_iter().collect(), one_of)),
        Just(Shape::RealUnion),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        let style = prop_oneof![
            Just(NullStyle::AnyOf),
            Just(NullStyle::OneOf),
            Just(NullStyle::TypeList)
        ];
        prop_oneof![
            inner.clone().prop_map(|s| Shape::Arr(Box::new(s))),
            (props(inner.clone()), any::<bool>())
                .prop_map(|(props, closed)| Shape::Obj { props, closed }),
            (inner.clone(), style).prop_map(|(s, st)| Shape::Nullable(Box::new(s), st)),
            inner.clone().prop_map(|s| Shape::Ref(Box::new(s))),
            props(inner.clone()).prop_map(Shape::Split),
            props(inner.clone()).prop_map(Shape::Unevaluated),
            props(inner.clone()).prop_map(Shape::Conditional),
            inner.prop_map(|s| Shape::Annotated(Box::new(s))),
        ]
    })
}

/// A root: always an object of generated properties.
fn root_shape() -> impl Strategy<Value = Shape> {
    (props(shape().boxed()), any::<bool>()).prop_map(|(props, closed)| Shape::Obj { props, closed })
}

struct Writer {
    defs: Map<String, Value>,
}

impl Writer {
    fn properties(&mut self, props: &[(String, Shape, bool)]) -> (Value, Value) {
        let mut map = Map::new();
        let mut required = Vec::new();
        for (name, shape, req) in props {
            map.insert(name.clone(), self.write(shape));
            if *req {
                required.push(json!(name));
            }
        }
        (Value::Object(map), Value::Array(required))
    }

    fn write(&mut self, shape: &Shape) -> Value {
        match shape {
            Shape::Str { min_len, choices } => {
                let mut s = json!({"type": "string"});
                if let Some(n) = min_len {
                    s["minLength"] = json!(n);
                }
                if let Some(c) = choices {
                    s["enum"] = json!(c);
                }
                s
            }
            Shape::Int { min, max } => {
                let mut s = json!({"type": "integer"});
                if let Some(n) = min {
                    s["minimum"] = json!(n);
                }
                if let Some(n) = max {
                    s["maximum"] = json!(n);
                }
                s
            }
            Shape::Num => json!({"type": "number"}),
            Shape::Bool => json!({"type": "boolean"}),
            Shape::Null => json!({"type": "null"}),
            Shape::Any => json!({}),
            Shape::Arr(item) => json!({"type": "array", "items": self.write(item), "maxItems": 3}),
            Shape::Obj { props, closed } => {
                let (p, r) = self.properties(props);
                let mut s = json!({"type": "object", "properties": p, "required": r});
                if *closed {
                    s["additionalProperties"] = json!(false);
                }
                s
            }
            Shape::Nullable(inner, style) => {
                let inner = self.write(inner);
                match (style, inner.get("type")) {
                    (NullStyle::TypeList, Some(Value::String(t)))
                        if t != "null" && inner.get("enum").is_none() =>
                    {
                        let mut s = inner.clone();
                        s["type"] = json!([t, "null"]);
                        s
                    }
                    (NullStyle::OneOf, _) => json!({"oneOf": [inner, {"type": "null"}]}),
                    _ => json!({"anyOf": [{"type": "null"}, inner]}),
                }
            }
            Shape::Ref(inner) => {
                let name = format!("D{}", self.defs.len());
                self.defs.insert(name.clone(), Value::Null);
                let target = self.write(inner);
                self.defs.insert(name.clone(), target);
                json!({"$ref": format!("#/$defs/{name}"), "description": "by reference"})
            }
            Shape::Split(props) => {
                let half = props.len() / 2;
                let (p1, r1) = self.properties(&props[..half]);
                let (p2, r2) = self.properties(&props[half..]);
                json!({"type": "object", "allOf": [
                    {"properties": p1, "required": r1},
                    {"properties": p2, "required": r2}
                ]})
            }
            Shape::Unevaluated(props) => {
                let name = format!("D{}", self.defs.len());
                self.defs.insert(name.clone(), Value::Null);
                let (p, r) = self.properties(props);
                self.defs
                    .insert(name.clone(), json!({"properties": p, "required": r}));
                json!({"type": "object", "$ref": format!("#/$defs/{name}"), "unevaluatedProperties": false})
            }
            Shape::Values(values, one_of) => {
                let branches: Vec<Value> = values.iter().map(|v| json!({"const": v})).collect();
                if *one_of {
                    json!({"oneOf": branches})
                } else {
                    json!({"anyOf": branches})
                }
            }
            Shape::Conditional(props) => {
                let (p, r) = self.properties(props);
                json!({
                    "type": "object", "properties": p, "required": r,
                    "if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"maxProperties": 2}
                })
            }
            Shape::RealUnion => json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            Shape::Annotated(inner) => {
                let mut s = self.write(inner);
                if let Value::Object(map) = &mut s {
                    map.insert("title".into(), json!("T"));
                    map.insert("x-mcp-header".into(), json!("Anywhere"));
                    map.insert("x-vendor".into(), json!({"$ref": "not a schema"}));
                }
                s
            }
        }
    }
}

fn to_schema(shape: &Shape) -> Value {
    let mut writer = Writer { defs: Map::new() };
    let mut schema = writer.write(shape);
    if !writer.defs.is_empty() {
        schema["$defs"] = Value::Object(writer.defs);
    }
    schema
}

/// Whether the shape uses a rule that widens (so the projection may accept more).
fn widens(shape: &Shape) -> bool {
    let any = |props: &[(String, Shape, bool)]| props.iter().any(|(_, s, _)| widens(s));
    match shape {
        Shape::Conditional(_) => true,
        Shape::Arr(s) | Shape::Nullable(s, _) | Shape::Ref(s) | Shape::Annotated(s) => widens(s),
        Shape::Obj { props, .. } | Shape::Split(props) | Shape::Unevaluated(props) => any(props),
        _ => false,
    }
}

/// Whether null is valid for the shape.
fn admits_null(shape: &Shape) -> bool {
    match shape {
        Shape::Null | Shape::Any | Shape::Nullable(..) => true,
        Shape::Ref(s) | Shape::Annotated(s) => admits_null(s),
        _ => false,
    }
}

/// The documented outcome: `None` if the tool is offered, else the reason's kind.
fn expected_refusal(shape: &Shape) -> Option<&'static str> {
    let first =
        |props: &[(String, Shape, bool)]| props.iter().find_map(|(_, s, _)| expected_refusal(s));
    match shape {
        Shape::RealUnion => Some("union"),
        Shape::Nullable(inner, NullStyle::OneOf) if admits_null(inner) => {
            expected_refusal(inner).or(Some("union"))
        }
        Shape::Nullable(inner, _)
        | Shape::Arr(inner)
        | Shape::Ref(inner)
        | Shape::Annotated(inner) => expected_refusal(inner),
        Shape::Obj { props, .. }
        | Shape::Split(props)
        | Shape::Unevaluated(props)
        | Shape::Conditional(props) => first(props),
        _ => None,
    }
}

/// Instances mostly valid for the shape, sometimes not.
fn instance(shape: &Shape) -> BoxedStrategy<Value> {
    let noise = prop_oneof![
        Just(json!(null)),
        Just(json!("x")),
        Just(json!(7)),
        Just(json!(1.5)),
        Just(json!([]))
    ];
    let valid: BoxedStrategy<Value> = match shape {
        Shape::Str {
            choices: Some(c), ..
        } => prop::sample::select(c.clone())
            .prop_map(Value::String)
            .boxed(),
        Shape::Str { .. } => "[a-c]{0,3}".prop_map(Value::String).boxed(),
        Shape::Int { .. } => (-7i64..7).prop_map(Value::from).boxed(),
        Shape::Num => prop_oneof![
            (-5i64..5).prop_map(Value::from),
            (-5.0f64..5.0).prop_map(Value::from)
        ]
        .boxed(),
        Shape::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Shape::Null => Just(Value::Null).boxed(),
        Shape::Any | Shape::RealUnion => {
            prop_oneof![Just(json!("s")), Just(json!(3)), Just(json!({"k": 1}))].boxed()
        }
        Shape::Arr(item) => prop::collection::vec(instance(item), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        Shape::Nullable(inner, _) => prop_oneof![Just(Value::Null), instance(inner)].boxed(),
        Shape::Ref(inner) | Shape::Annotated(inner) => instance(inner),
        Shape::Values(values, _) => prop::sample::select(values.clone())
            .prop_map(Value::from)
            .boxed(),
        Shape::Obj { props, .. }
        | Shape::Split(props)
        | Shape::Unevaluated(props)
        | Shape::Conditional(props) => object_instance(props),
    };
    prop_oneof![9 => valid, 1 => noise].boxed()
}

fn object_instance(props: &[(String, Shape, bool)]) -> BoxedStrategy<Value> {
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
        .iter()
        .map(|(name, shape, required)| {
            let name = name.clone();
            let present = if *required { 0.95 } else { 0.6 };
            prop::option::weighted(present, instance(shape))
                .prop_map(move |v| v.map(|v| (name.clone(), v)))
                .boxed()
        })
        .collect();
    (
        fields,
        prop::option::weighted(0.1, Just(("zz".to_owned(), json!(1)))),
    )
        .prop_map(|(fields, extra)| {
            let mut map: Map<String, Value> = fields.into_iter().flatten().collect();
            if let Some((k, v)) = extra {
                map.insert(k, v);
            }
            Value::Object(map)
        })
        .boxed()
}

fn case() -> impl Strategy<Value = (Shape, Vec<Value>)> {
    root_shape().prop_flat_map(|shape| {
        let instances = prop::collection::vec(instance(&shape), 1..6);
        (Just(shape), instances)
    })
}

const LEGACY: SchemaProfile = SchemaProfile::V2025_06_18;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn legacy_projection_is_sound_idempotent_and_flat((shape, instances) in case()) {
        let declared = to_schema(&shape);
        let projection = project_input(&declared, &LEGACY);
        let expected = expected_refusal(&shape);
        let projected = match (&projection, expected) {
            (Projection::Offered(projected), None) => projected.clone(),
            (Projection::NotOffered(why), Some("union")) => {
                prop_assert!(matches!(why.reason(), NotOfferedReason::Union { .. }), "{why}");
                return Ok(());
            }
            _ => {
                return Err(TestCaseError::fail(format!(
                    "expected {expected:?}, got {projection:?} for {declared:#}"
                )));
            }
        };
        // Flat, object root, nothing a legacy client cannot hold.
        prop_assert!(!common::holds_ref_or_header(&projected), "{projected:#}");
        prop_assert_eq!(projected.get("type"), Some(&json!("object")));
        prop_assert!(projected.get("$defs").is_none());
        // Idempotent.
        prop_assert_eq!(project_input(&projected, &LEGACY), Projection::Offered(projected.clone()));
        // Sound: valid under the declared schema means valid under the projection, read as
        // 2020-12 and as draft-07; without a widening rule, the converse holds too.
        let original = Validator::compile(&declared).unwrap();
        let as_2020 = Validator::compile(&projected).unwrap();
        let as_draft7 = ValidatorOptions::new().default_dialect(Dialect::Draft7).compile(&projected).unwrap();
        let lossless = !widens(&shape);
        for instance in &instances {
            let before = original.is_valid(instance);
            for (dialect, projected_validator) in [("2020-12", &as_2020), ("draft-07", &as_draft7)] {
                let after = projected_validator.is_valid(instance);
                prop_assert!(!before || after, "{dialect}: {instance} valid for {declared:#} but not for {projected:#}");
                if lossless {
                    prop_assert_eq!(before, after, "{}: {} for {:#} vs {:#}", dialect, instance, declared, projected);
                }
            }
        }
        // And a valid `Tool.inputSchema` for every legacy revision.
        if let Some(schemas) = common::tool_schemas() {
            for schema in schemas {
                let tool = common::tool(&projected, None);
                prop_assert!(schema.validator.is_valid(&tool), "{}: {projected:#}", schema.revision);
            }
        }
    }
}

/// A header case: an object tree, annotations on some primitive properties reachable through
/// `properties` only, and unannotated look-alikes elsewhere.
#[derive(Clone, Debug)]
enum HNode {
    Prim(&'static str, bool),
    Obj(Vec<(String, Self)>),
    /// An array of objects: nothing under it is reachable.
    Arr(Box<Self>),
}

fn hnode() -> impl Strategy<Value = HNode> {
    let leaf = (
        prop::sample::select(vec!["string", "integer", "boolean"]),
        any::<bool>(),
    )
        .prop_map(|(t, annotate)| HNode::Prim(t, annotate));
    leaf.prop_recursive(4, 20, 4, |inner| {
        prop_oneof![
            prop::collection::btree_map(name(), inner.clone(), 0..4)
                .prop_map(|m| HNode::Obj(m.into_iter().collect())),
            inner.prop_map(|n| HNode::Arr(Box::new(n))),
        ]
    })
}

/// Writes the tree; annotated reachable properties get unique names (in varied case), which
/// are recorded with their path.
fn write_headers(
    node: &HNode,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut BTreeSet<(Vec<String>, String)>,
) -> Value {
    match node {
        HNode::Prim(t, annotate) => {
            let mut s = json!({"type": t});
            if *annotate && reachable && !path.is_empty() {
                let n = found.len();
                let name = if n.is_multiple_of(2) {
                    format!("Param-{n}")
                } else {
                    format!("pARAM_{n}")
                };
                s["x-mcp-header"] = json!(name);
                found.insert((path.clone(), name));
            }
            s
        }
        HNode::Obj(props) => {
            let mut map = Map::new();
            for (name, child) in props {
                path.push(name.clone());
                map.insert(name.clone(), write_headers(child, path, reachable, found));
                path.pop();
            }
            json!({"type": "object", "properties": map})
        }
        HNode::Arr(item) => {
            json!({"type": "array", "items": write_headers(item, path, false, found)})
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn header_extraction_finds_exactly_the_annotated_reachable_properties(
        props in prop::collection::btree_map(name(), hnode(), 0..5)
    ) {
        let root = HNode::Obj(props.into_iter().collect());
        let mut expected = BTreeSet::new();
        let schema = write_headers(&root, &mut Vec::new(), true, &mut expected);
        let bindings = extract_headers(&schema).unwrap();
        let got: BTreeSet<(Vec<String>, String)> = bindings
            .iter()
            .map(|b| (b.property_path().to_vec(), b.name().to_owned()))
            .collect();
        prop_assert_eq!(got.len(), bindings.len(), "no duplicates");
        prop_assert_eq!(got, expected);
        // Every binding is stripped from the legacy projection and kept on 2026-07-28.
        let legacy = project_input(&schema, &LEGACY);
        prop_assert!(!common::holds_ref_or_header(legacy.offered().unwrap()));
        prop_assert_eq!(project_input(&schema, &SchemaProfile::V2026_07_28), Projection::Offered(schema));
    }

    #[test]
    fn an_annotation_off_the_properties_chain_is_refused(
        props in prop::collection::btree_map(name(), hnode(), 1..4),
        wrapper in prop::sample::select(vec!["items", "anyOf", "allOf", "not", "$defs", "then"]),
    ) {
        let annotated = json!({"type": "string", "x-mcp-header": "Hidden"});
        let hidden = match wrapper {
            "items" => json!({"type": "array", "items": annotated}),
            "$defs" => json!({"$defs": {"H": annotated}}),
            "then" => json!({"if": true, "then": annotated}),
            "not" => json!({"not": annotated}),
            combinator => json!({combinator: [annotated]}),
        };
        let root = HNode::Obj(props.into_iter().collect());
        let mut schema = write_headers(&root, &mut Vec::new(), true, &mut BTreeSet::new());
        schema["properties"]["zz"] = hidden;
        let err = extract_headers(&schema).unwrap_err();
        prop_assert!(matches!(err, HeaderAnnotationError::Unreachable { .. }), "{err}");
        prop_assert!(err.path().starts_with("/properties/zz/"), "{}", err.path());
    }
}
