/// One environment on a stack, boxed so that publishing it is one pointer store.
///
/// Frames are immutable once built: a reader that holds one may read it without a lock.
@usableFromInline
final class Frame<App: EnvironmentSchema>: Sendable {
    @usableFromInline let environment: Environment<App>

    @usableFromInline
    init(_ environment: Environment<App>) {
        self.environment = environment
    }
}
