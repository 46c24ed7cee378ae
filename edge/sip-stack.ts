import * as sip from "sip";

/**
 * `sip.create` without its flow-token routing: the package treats every request whose next
 * hop has the endpoint's own host as a flow token of its own, so a trunk or a phone on the
 * node's address (loopback, a PBX on the same host) was never reached. This is the same
 * transport and transaction layer, with requests always resolved and sent.
 */
export function createSipStack(
  options: sip.Options,
  onRequest: (rq: sip.Message, remote: sip.Remote) => void,
): sip.Stack {
  const log = options.logger?.error ?? (() => {});
  const transport = sip.makeTransport(options, (m, remote) => {
    try {
      const t = m.method ? transactions.getServer(m) : transactions.getClient(m);
      if (t) {
        t.message?.(m, remote);
        return;
      }
      if (m.method === "ACK") onRequest(m, remote);
      else if (m.method) {
        const server = transactions.createServerTransaction(m, transport.get(remote));
        try {
          onRequest(m, remote);
        } catch (error) {
          server.send(sip.makeResponse(m, 500, "Internal Server Error"));
          throw error;
        }
      }
    } catch (error) {
      log(error);
    }
  });
  const transactions = sip.makeTransactionLayer(options, transport.open.bind(transport));

  const send = (m: sip.Message, callback: (rs: sip.Message) => void = () => {}) => {
    if (m.method === undefined) {
      transactions.getServer(m)?.send?.(m);
      return;
    }
    const route = m.headers.route;
    let hop = sip.parseUri(m.uri as string);
    if (route && route.length > 0) {
      hop = sip.parseUri(route[0]?.uri as string);
      if (hop.params.lr === undefined) {
        // A strict router: it becomes the Request-URI, the old one goes last (RFC 3261 §12.2.1.1).
        route.shift();
        route.push({ uri: m.uri as string, params: {} });
        m.uri = sip.stringifyUri(hop);
      }
    }
    sip.resolve(hop, (addresses) => {
      if (m.method === "ACK") {
        m.headers.via = m.headers.via?.length
          ? m.headers.via
          : [{ params: { branch: sip.generateBranch() } }];
        const first = addresses[0];
        if (!first) return log(new Error(`ACK: cannot resolve ${String(m.uri)}`));
        const connection = transport.open(first, log);
        try {
          connection.send(m);
        } catch (error) {
          log(error);
        } finally {
          connection.release();
        }
        return;
      }
      searchAddresses(m, addresses, callback);
    });
  };

  /**
   * Tries the resolved addresses in turn while the answer is a 503 (RFC 3263 §4.3). The last
   * address's answer is the request's, as it came: a trunk's own 503, with its Reason header,
   * is its verdict on the call, and only a 503 the transport made up stands for the network.
   */
  function searchAddresses(
    rq: sip.Message,
    addresses: sip.Address[],
    callback: (rs: sip.Message) => void,
  ) {
    if (rq.method !== "CANCEL") {
      rq.headers.via = rq.headers.via ?? [];
      rq.headers.via.unshift({ params: {} });
    }
    let onResponse: (rs: sip.Message) => void;
    const searching = (rs: sip.Message) => {
      if (rs.status === 503 && addresses.length > 0) return next();
      if ((rs.status ?? 0) > 100) onResponse = callback;
      callback(rs);
    };
    const next = () => {
      onResponse = searching;
      const address = addresses.shift();
      if (!address) {
        // Nothing resolved: no address was ever tried.
        onResponse = callback;
        callback(sip.makeResponse(rq, 404));
        return;
      }
      try {
        const client = transactions.createClientTransaction(
          transport.open(address, () => client.message(sip.makeResponse(rq, 503))),
          rq,
          (rs: sip.Message) => onResponse(rs),
        );
      } catch {
        onResponse(sip.makeResponse(rq, 503));
      }
    };
    next();
  }

  return {
    send,
    destroy() {
      transactions.destroy();
      transport.destroy();
    },
    hostname: () => options.publicAddress ?? options.address ?? "",
  };
}
