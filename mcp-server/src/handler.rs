//! Handlers: the one trait every tool, prompt and resource handler implements, and the parts
//! of a call a handler can take as arguments.
//!
//! The table of shapes and an example are on [`Handler`].

use std::any::TypeId;
use std::future::Future;
use std::marker::PhantomData;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::exchange::Exchange;
use crate::notifier::Notifier;

/// Arguments of a tool or prompt that takes none: its input schema is
/// `{"type": "object", "additionalProperties": false}`, as the spec recommends. A handler
/// without an input argument has this input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "additionalProperties": false})
    }
}

/// A part of the call a handler takes as an argument before its input: [`State<S>`] and
/// [`Notifier`]. (The [`Exchange`] itself comes last, after the input.)
///
/// Implement it for your own types to give handlers what they would otherwise dig out of the
/// exchange:
///
/// ```
/// use mcp_server::{Exchange, FromExchange, Server, Tool};
///
/// /// Who is calling, as far as the server knows.
/// struct Caller(Option<String>);
///
/// impl FromExchange for Caller {
///     fn from_exchange(ex: &Exchange) -> Self {
///         Self(ex.principal().map(str::to_owned))
///     }
/// }
///
/// async fn whoami(Caller(who): Caller) -> String {
///     who.unwrap_or_else(|| "anonymous".into())
/// }
///
/// let server = Server::builder("demo", "1.0").tool(Tool::new("whoami", whoami)).build().unwrap();
/// # let _ = server;
/// ```
pub trait FromExchange: Sized + Send + 'static {
    /// Takes the part from the call.
    fn from_exchange(ex: &Exchange) -> Self;

    /// The type of the server state this part needs, if any: a server without
    /// [`with_state`](crate::ServerBuilder::with_state) of that type refuses to build. Default
    /// none.
    fn state_type() -> Option<(TypeId, &'static str)> {
        None
    }
}

/// The server's shared state as a handler argument, set once with
/// [`ServerBuilder::with_state`](crate::ServerBuilder::with_state) (each call gets a clone, so
/// share what changes behind an `Arc`).
#[derive(Debug, Clone, Copy, Default)]
pub struct State<S>(pub S);

impl<S: Clone + Send + Sync + 'static> FromExchange for State<S> {
    fn from_exchange(ex: &Exchange) -> Self {
        match ex.app_state::<S>() {
            Some(state) => Self(state),
            // Unreachable through a built server (it checks the type); a panic in a handler
            // is a failed call, not a crash.
            None => panic!(
                "no server state of type {} (ServerBuilder::with_state)",
                std::any::type_name::<S>()
            ),
        }
    }

    fn state_type() -> Option<(TypeId, &'static str)> {
        Some((TypeId::of::<S>(), std::any::type_name::<S>()))
    }
}

/// The server's [`Notifier`] as a handler argument, publishing in the call's namespace: what
/// [`Server::notifier`](crate::Server::notifier) gives, without keeping it somewhere for the
/// handler.
impl FromExchange for Notifier {
    fn from_exchange(ex: &Exchange) -> Self {
        ex.notifier()
    }
}

/// Not exported: only this crate can name it, so only this crate calls or overrides the
/// methods that take it.
#[derive(Debug)]
pub struct Token(pub(crate) ());

/// A handler is an async function (or closure) of one of these shapes, where `P…` are up to
/// three [`FromExchange`] parts ([`State<S>`], [`Notifier`]), `I` is the input (a tool's or
/// prompt's typed arguments, a resource's [`ResourceRequest`](crate::ResourceRequest)) and
/// `R` what it returns:
///
/// | shape | input |
/// |---|---|
/// | `async fn(P…, I) -> R` | `I` |
/// | `async fn(P…, I, Exchange) -> R` | `I`, and the handler may ask |
/// | `async fn(P…) -> R` | none ([`NoArgs`]) |
/// | `async fn(P…, Exchange) -> R` | none, and the handler may ask |
///
/// ```
/// use mcp_server::{Exchange, Notifier, Prompt, Resource, ResourceRequest, Server, State, Tool};
///
/// #[derive(Clone)]
/// struct Db(&'static str);
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Find { key: String }
///
/// async fn find(State(db): State<Db>, args: Find) -> String {
///     format!("{}: {}", db.0, args.key)
/// }
/// async fn touch(notifier: Notifier, ex: Exchange) -> String {
///     let _ = notifier.resource_updated("memo://today").await;
///     format!("touched on {}", ex.revision())
/// }
/// async fn now() -> String {
///     "12:00".into()
/// }
/// async fn read(State(db): State<Db>, request: ResourceRequest) -> String {
///     format!("{} at {}", db.0, request.uri)
/// }
///
/// let server = Server::builder("demo", "1.0")
///     .with_state(Db("main"))
///     .tool(Tool::new("find", find))
///     .tool(Tool::new("touch", touch))
///     .tool(Tool::new("now", now))
///     .prompt(Prompt::new("now", now))
///     .resource(Resource::new("memo://today", "today", read))
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
///
/// Implemented for async functions and closures of those shapes. Implement it yourself for a
/// handler that is a type rather than a function: `call` is then what the server runs, with
/// an [`Exchange`] for every call. `M` tells the shapes apart; it is always inferred (a
/// type's own implementation picks any marker type of its own).
pub trait Handler<M>: Send + Sync + 'static {
    /// What the handler takes besides the parts of the call: a tool's or prompt's typed
    /// arguments, a resource's [`ResourceRequest`](crate::ResourceRequest).
    type Input: Send + 'static;
    /// What it returns.
    type Output: Send + 'static;
    /// The handler takes the [`Exchange`], so it may ask the client (on revisions where
    /// questions ride in a tool's arguments, the tool gains the `mcpAnswers` / `mcpState`
    /// properties).
    const TAKES_EXCHANGE: bool;

    /// Runs the handler.
    fn call(&self, input: Self::Input, ex: Exchange) -> BoxFuture<'static, Self::Output>;

    /// The types of the server state its parts take (checked when the server is built: the
    /// server has one state, so a handler taking two different `State<S>` types cannot be
    /// served). Default none.
    fn state_types() -> Vec<(TypeId, &'static str)> {
        Vec::new()
    }

    /// Starts the handler and maps its output in the same boxed future, building the call's
    /// exchange only when the handler needs one. Sealed: the implementations for functions
    /// override it; a type's own implementation keeps this default.
    #[doc(hidden)]
    fn start<T: Send + 'static>(
        &self,
        input: Self::Input,
        exchange: &mut dyn FnMut() -> Exchange,
        then: fn(Self::Output) -> T,
        _: Token,
    ) -> BoxFuture<'static, T> {
        let fut = self.call(input, exchange());
        async move { then(fut.await) }.boxed()
    }
}

/// Marker of a handler `async fn(P…, I) -> R` (`P` the parts as a tuple).
#[derive(Debug)]
pub struct WithInput<P, I>(PhantomData<fn(P, I)>);

/// Marker of a handler `async fn(P…, I, Exchange) -> R`.
#[derive(Debug)]
pub struct WithInputAndExchange<P, I>(PhantomData<fn(P, I)>);

/// Marker of a handler `async fn(P…) -> R` (no input).
#[derive(Debug)]
pub struct PartsOnly<P>(PhantomData<fn(P)>);

/// Marker of a handler `async fn(P…, Exchange) -> R` (no input).
#[derive(Debug)]
pub struct PartsAndExchange<P>(PhantomData<fn(P)>);

// No parts: the exchange is built only for the shapes that take it.

impl<F, Fut, I, R> Handler<WithInput<(), I>> for F
where
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    I: DeserializeOwned + Send + 'static,
    R: Send + 'static,
{
    type Input = I;
    type Output = R;
    const TAKES_EXCHANGE: bool = false;

    fn call(&self, input: I, _: Exchange) -> BoxFuture<'static, R> {
        self(input).boxed()
    }

    fn start<T: Send + 'static>(
        &self,
        input: I,
        _: &mut dyn FnMut() -> Exchange,
        then: fn(R) -> T,
        _: Token,
    ) -> BoxFuture<'static, T> {
        let fut = self(input);
        async move { then(fut.await) }.boxed()
    }
}

impl<F, Fut, I, R> Handler<WithInputAndExchange<(), I>> for F
where
    F: Fn(I, Exchange) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    I: DeserializeOwned + Send + 'static,
    R: Send + 'static,
{
    type Input = I;
    type Output = R;
    const TAKES_EXCHANGE: bool = true;

    fn call(&self, input: I, ex: Exchange) -> BoxFuture<'static, R> {
        self(input, ex).boxed()
    }

    fn start<T: Send + 'static>(
        &self,
        input: I,
        exchange: &mut dyn FnMut() -> Exchange,
        then: fn(R) -> T,
        _: Token,
    ) -> BoxFuture<'static, T> {
        let fut = self(input, exchange());
        async move { then(fut.await) }.boxed()
    }
}

impl<F, Fut, R> Handler<PartsOnly<()>> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: Send + 'static,
{
    type Input = NoArgs;
    type Output = R;
    const TAKES_EXCHANGE: bool = false;

    fn call(&self, _: NoArgs, _: Exchange) -> BoxFuture<'static, R> {
        self().boxed()
    }

    fn start<T: Send + 'static>(
        &self,
        _: NoArgs,
        _: &mut dyn FnMut() -> Exchange,
        then: fn(R) -> T,
        _: Token,
    ) -> BoxFuture<'static, T> {
        let fut = self();
        async move { then(fut.await) }.boxed()
    }
}

impl<F, Fut, R> Handler<PartsAndExchange<()>> for F
where
    F: Fn(Exchange) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: Send + 'static,
{
    type Input = NoArgs;
    type Output = R;
    const TAKES_EXCHANGE: bool = true;

    fn call(&self, _: NoArgs, ex: Exchange) -> BoxFuture<'static, R> {
        self(ex).boxed()
    }

    fn start<T: Send + 'static>(
        &self,
        _: NoArgs,
        exchange: &mut dyn FnMut() -> Exchange,
        then: fn(R) -> T,
        _: Token,
    ) -> BoxFuture<'static, T> {
        let fut = self(exchange());
        async move { then(fut.await) }.boxed()
    }
}

/// The shapes with one or more parts: the exchange is built for the parts.
macro_rules! with_parts {
    ($($part:ident),+) => {
        impl<F, Fut, $($part,)+ I, R> Handler<WithInput<($($part,)+), I>> for F
        where
            F: Fn($($part,)+ I) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            $($part: FromExchange,)+
            I: DeserializeOwned + Send + 'static,
            R: Send + 'static,
        {
            type Input = I;
            type Output = R;
            const TAKES_EXCHANGE: bool = false;

            fn call(&self, input: I, ex: Exchange) -> BoxFuture<'static, R> {
                self($($part::from_exchange(&ex),)+ input).boxed()
            }

            fn start<T: Send + 'static>(
                &self,
                input: I,
                exchange: &mut dyn FnMut() -> Exchange,
                then: fn(R) -> T,
                _: Token,
            ) -> BoxFuture<'static, T> {
                let ex = exchange();
                let fut = self($($part::from_exchange(&ex),)+ input);
                async move { then(fut.await) }.boxed()
            }

            fn state_types() -> Vec<(TypeId, &'static str)> {
                [$($part::state_type(),)+].into_iter().flatten().collect()
            }
        }

        impl<F, Fut, $($part,)+ I, R> Handler<WithInputAndExchange<($($part,)+), I>> for F
        where
            F: Fn($($part,)+ I, Exchange) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            $($part: FromExchange,)+
            I: DeserializeOwned + Send + 'static,
            R: Send + 'static,
        {
            type Input = I;
            type Output = R;
            const TAKES_EXCHANGE: bool = true;

            fn call(&self, input: I, ex: Exchange) -> BoxFuture<'static, R> {
                self($($part::from_exchange(&ex),)+ input, ex).boxed()
            }

            fn start<T: Send + 'static>(
                &self,
                input: I,
                exchange: &mut dyn FnMut() -> Exchange,
                then: fn(R) -> T,
                _: Token,
            ) -> BoxFuture<'static, T> {
                let ex = exchange();
                let fut = self($($part::from_exchange(&ex),)+ input, ex);
                async move { then(fut.await) }.boxed()
            }

            fn state_types() -> Vec<(TypeId, &'static str)> {
                [$($part::state_type(),)+].into_iter().flatten().collect()
            }
        }

        impl<F, Fut, $($part,)+ R> Handler<PartsOnly<($($part,)+)>> for F
        where
            F: Fn($($part,)+) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            $($part: FromExchange,)+
            R: Send + 'static,
        {
            type Input = NoArgs;
            type Output = R;
            const TAKES_EXCHANGE: bool = false;

            fn call(&self, _: NoArgs, ex: Exchange) -> BoxFuture<'static, R> {
                self($($part::from_exchange(&ex),)+).boxed()
            }

            fn start<T: Send + 'static>(
                &self,
                _: NoArgs,
                exchange: &mut dyn FnMut() -> Exchange,
                then: fn(R) -> T,
                _: Token,
            ) -> BoxFuture<'static, T> {
                let ex = exchange();
                let fut = self($($part::from_exchange(&ex),)+);
                async move { then(fut.await) }.boxed()
            }

            fn state_types() -> Vec<(TypeId, &'static str)> {
                [$($part::state_type(),)+].into_iter().flatten().collect()
            }
        }

        impl<F, Fut, $($part,)+ R> Handler<PartsAndExchange<($($part,)+)>> for F
        where
            F: Fn($($part,)+ Exchange) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            $($part: FromExchange,)+
            R: Send + 'static,
        {
            type Input = NoArgs;
            type Output = R;
            const TAKES_EXCHANGE: bool = true;

            fn call(&self, _: NoArgs, ex: Exchange) -> BoxFuture<'static, R> {
                self($($part::from_exchange(&ex),)+ ex).boxed()
            }

            fn start<T: Send + 'static>(
                &self,
                _: NoArgs,
                exchange: &mut dyn FnMut() -> Exchange,
                then: fn(R) -> T,
                _: Token,
            ) -> BoxFuture<'static, T> {
                let ex = exchange();
                let fut = self($($part::from_exchange(&ex),)+ ex);
                async move { then(fut.await) }.boxed()
            }

            fn state_types() -> Vec<(TypeId, &'static str)> {
                [$($part::state_type(),)+].into_iter().flatten().collect()
            }
        }
    };
}

with_parts!(P1);
with_parts!(P1, P2);
with_parts!(P1, P2, P3);
