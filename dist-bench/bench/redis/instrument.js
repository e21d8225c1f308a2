/**
 * Counts the commands that clients send, by name. `INFO commandstats` also counts the commands
 * that Lua scripts call inside Redis; this counter sees only what crosses the wire, so the two
 * together separate "work Redis does" from "requests a client makes".
 */
export class CommandCounter {
    sent = 0;
    byName = new Map();
    connections = 0;
    /** While tracing: every send (see {@link traceSends}), and per connection its round trips. */
    trace;
    roundTrips = new Map();
    get tracing() {
        return this.trace !== undefined;
    }
    /** A number for one more counted connection. */
    newConnection() {
        return ++this.connections;
    }
    record(name, connection) {
        this.sent++;
        this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
        if (!this.trace)
            return;
        let state = this.roundTrips.get(connection);
        if (!state)
            this.roundTrips.set(connection, (state = { current: 0, replied: false }));
        // A reply came back since this connection's last send: this send starts a new round trip.
        if (state.replied) {
            state.current++;
            state.replied = false;
        }
        this.trace.push({ name, connection, roundTrip: state.current, at: performance.now() });
    }
    /** A reply (or error) arrived on `connection`. */
    replied(connection) {
        const state = this.roundTrips.get(connection);
        if (state)
            state.replied = true;
    }
    snapshot() {
        return new Map(this.byName);
    }
    /** Starts recording each send; `stop()` returns what was recorded. */
    traceSends() {
        this.trace = [];
        this.roundTrips.clear();
        return {
            stop: () => {
                const trace = this.trace ?? [];
                this.trace = undefined;
                return trace;
            },
        };
    }
}
/** Per-name difference `after − before` of two counter snapshots. */
export function countDelta(before, after) {
    const delta = new Map();
    for (const [name, calls] of after) {
        const d = calls - (before.get(name) ?? 0);
        if (d !== 0)
            delta.set(name, d);
    }
    return delta;
}
/**
 * Makes `client` (and every connection later duplicated from it, such as a lock library's
 * pub/sub subscriber) report each command it sends to `counter`. Outside tracing, the wrapper
 * is one counter increment per command, the same for every implementation.
 */
export function instrument(client, counter) {
    const connection = counter.newConnection();
    const send = client.sendCommand.bind(client);
    client.sendCommand = (command, ...rest) => {
        counter.record(command.name.toLowerCase(), connection);
        const reply = send(command, ...rest);
        if (counter.tracing) {
            const replied = () => counter.replied(connection);
            Promise.resolve(reply).then(replied, replied);
        }
        return reply;
    };
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (...args) => instrument(duplicate(...args), counter);
    return client;
}
//# sourceMappingURL=instrument.js.map