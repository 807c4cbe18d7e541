// A language server in the test's process, for a real vscode-languageclient to start against.
import { PassThrough } from 'node:stream';
import {
    createMessageConnection,
    ExecuteCommandParams,
    InitializeParams,
    MessageConnection,
    MessageTransports,
    StreamMessageReader,
    StreamMessageWriter,
} from 'vscode-languageclient/node';

// What the in-memory server saw.
export interface Server {
    connection: MessageConnection;
    initialize: Promise<InitializeParams>;
    setTrace: string[];
}

// A server that answers initialize with `capabilities`, and workspace/executeCommand with `name`
// and the command's arguments, over the streams given to the client by `transports`.
export function inMemoryServer(
    capabilities: object,
    name = 'fake gbls',
): { server: Server; transports: () => Promise<MessageTransports> } {
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const connection = createMessageConnection(new StreamMessageReader(toServer), new StreamMessageWriter(toClient));
    const setTrace: string[] = [];
    const initialize = new Promise<InitializeParams>((resolve) => {
        connection.onRequest('initialize', (params: InitializeParams) => {
            resolve(params);
            return { capabilities, serverInfo: { name } };
        });
    });
    connection.onNotification('$/setTrace', (params: { value: string }) => {
        setTrace.push(params.value);
    });
    connection.onRequest('workspace/executeCommand', (params: ExecuteCommandParams): unknown[] => [
        name,
        ...((params.arguments ?? []) as unknown[]),
    ]);
    connection.onRequest('shutdown', () => null);
    connection.listen();
    return {
        server: { connection, initialize, setTrace },
        transports: () =>
            Promise.resolve({ reader: new StreamMessageReader(toClient), writer: new StreamMessageWriter(toServer) }),
    };
}
