/// One environment on a stack, boxed so that publishing it is one pointer store.
///
/// Frames are immutable once built: a reader that holds one may read it without a lock.
///
/// NB: measured against a copy-on-write `Environment` (one box for all fields, which would make
/// this frame unnecessary): the box made pushes cheaper, but every field read then had to
/// retain the box, a write to memory that all reading threads share. Reads are the hot path,
/// so the environment stays a plain struct and the stack boxes it once per push.
@usableFromInline
final class Frame<App: EnvironmentSchema>: Sendable {
    @usableFromInline let environment: Environment<App>

    @inlinable
    init(_ environment: consuming Environment<App>) {
        self.environment = environment
    }
}
