"""One home for what tests of every folder share:

- :mod:`tests.support.polling`: :func:`until`, the one poll-with-deadline wait, and
  :func:`poll_messages`, a lite consumer polled until N messages came;
- :mod:`tests.support.inproc`: name server and brokers in the test's event loop;
- :mod:`tests.support.processes`: the same as `mq` processes; :mod:`tests.support.cluster`
  a whole cluster of them with ways to run the CLI against it;
- :mod:`tests.support.clients`: raw wire clients; :mod:`tests.support.acl`,
  :mod:`tests.support.tls_certs`: an ACL cluster, certificates.
"""

from tests.support.polling import poll_messages, until, until_sync

__all__ = ["poll_messages", "until", "until_sync"]
