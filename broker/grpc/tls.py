"""The TLS port of the gRPC endpoint (`serve --grpc-tls-port`): the 5.x Java client connects with TLS unless
told not to, and trusts any certificate, as the proxy's self-signed one. A certificate for this emulator is made
at the first start (EC P-256, ten years, for localhost, 127.0.0.1, ::1 and the advertised host) and kept in
`<store>/config/grpc-tls/` so that a client told to trust it (`GRPC_DEFAULT_SSL_ROOTS_FILE_PATH` for clients on
gRPC's C core, such as the Python one) keeps trusting it across restarts."""

from __future__ import annotations

import datetime
import ipaddress
import logging
from pathlib import Path

log = logging.getLogger("rocketmq_emulator.grpc")

CERT_FILE = "cert.pem"
KEY_FILE = "key.pem"


def certificate(folder: Path, hosts: list[str]) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM): the ones in `folder`, or new ones written there."""
    cert_path, key_path = folder / CERT_FILE, folder / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return cert_path.read_bytes(), key_path.read_bytes()
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(["localhost", "127.0.0.1", "::1", *hosts]):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rocketmq-emulator")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    folder.mkdir(parents=True, exist_ok=True)
    key_path.write_bytes(key_pem)
    key_path.chmod(0o600)
    cert_path.write_bytes(cert_pem)
    log.info("gRPC TLS: made a self-signed certificate, %s", cert_path)
    return cert_pem, key_pem
