import HabitatHummingbird
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime

/// The handlers of the OpenAPI-generated server (`OpenAPI/openapi.yaml`, code in `Generated/`).
/// A generated handler gets no request context, only its typed input; it reads the member from
/// the request's Habitat environment, as every other handler does, and the request's ID from
/// the trace context the middleware bound with it.
struct OpenAPIHandlers: APIProtocol {
    func getMe(_ input: Operations.getMe.Input) async throws -> Operations.getMe.Output {
        guard let member = appEnvironment.current.currentUser else { return .unauthorized(.init()) }
        let me = Components.Schemas.Me(id: member.id, name: member.name, requestID: RequestID.current?.description ?? "")
        return .ok(.init(body: .json(me)))
    }
}

/// Adds the generated routes under `/api`, behind the add-on's middleware.
func addOpenAPIRoutes(to router: Router<AppRequestContext>) throws {
    try OpenAPIHandlers().registerHandlers(on: router.group().add(middleware: boundMiddleware))
}
