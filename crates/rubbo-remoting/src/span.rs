//! Running connection tasks in their tracing span only when someone records it.

use std::future::Future;

use futures::future::Either;
use tracing::Instrument;

/// `fut` inside `span`, or `fut` alone when no subscriber records the span: the
/// wrapper would otherwise enter and leave a disabled span on every poll of a task
/// that is polled for every frame.
pub(crate) fn in_span<F: Future>(
    span: tracing::Span,
    fut: F,
) -> Either<F, tracing::instrument::Instrumented<F>> {
    if span.is_disabled() {
        Either::Left(fut)
    } else {
        Either::Right(fut.instrument(span))
    }
}
