"""Certificates for the dev fleet's TLS engines, made with `openssl` the way docker's "protect
the daemon socket" recipe makes them: one CA, a server certificate per node (its name and its
address as subject alternative names, `serverAuth`), a client certificate (`clientAuth`).

EC P-256 keys instead of the recipe's RSA 4096: the same handshake for docker and Python, in
milliseconds rather than seconds. `openssl ca` signs, so a certificate's validity can be put in
the past (an expired client certificate is one test's input). Keys stay in the fleet's folder.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from devfleet.processes import FleetError


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=cwd, check=False)
    if done.returncode != 0:
        raise FleetError(f"openssl {args[0]}: {done.stderr.strip()[-400:]}")


@dataclass(frozen=True)
class ClientCert:
    """A client's files, named as `DOCKER_CERT_PATH` wants them."""

    ca: Path
    cert: Path
    key: Path


@dataclass(frozen=True)
class ServerCert:
    """A server's files (dockerd `--tlscacert/--tlscert/--tlskey`)."""

    ca: Path
    cert: Path
    key: Path


class TestCA:
    """A certificate authority in `root` (created on first use, reused after)."""

    __test__ = False  # not a pytest test class, whatever its name says

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.ca = self.root / "ca.pem"
        self.ca_key = self.root / "ca-key.pem"
        if not self.ca.is_file():
            self._create()

    def _create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "newcerts").mkdir(exist_ok=True)
        (self.root / "index.txt").write_text("")
        (self.root / "serial").write_text("1000\n")
        self._key(self.ca_key)
        _openssl(
            "req",
            "-new",
            "-x509",
            "-days",
            "30",
            "-key",
            str(self.ca_key),
            "-subj",
            "/CN=rocmtui dev fleet CA",
            "-out",
            str(self.ca),
            cwd=self.root,
        )
        (self.root / "ca.cnf").write_text(
            "[ca]\ndefault_ca = fleet\n"
            f"[fleet]\ndatabase = {self.root}/index.txt\nnew_certs_dir = {self.root}/newcerts\n"
            f"serial = {self.root}/serial\ndefault_md = sha256\npolicy = any\n"
            "unique_subject = no\ncopy_extensions = none\n"
            "[any]\ncommonName = supplied\n"
        )

    def _key(self, path: Path) -> None:
        _openssl(
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            str(path),
            cwd=self.root,
        )
        path.chmod(0o600)

    def _sign(
        self,
        folder: Path,
        cn: str,
        extensions: str,
        valid: tuple[str, str] | None,
    ) -> tuple[Path, Path]:
        folder.mkdir(parents=True, exist_ok=True)
        key, csr, cert = folder / "key.pem", folder / "req.csr", folder / "cert.pem"
        self._key(key)
        _openssl(
            "req", "-new", "-key", str(key), "-subj", f"/CN={cn}", "-out", str(csr), cwd=folder
        )
        ext = folder / "ext.cnf"
        ext.write_text(f"[ext]\n{extensions}\n")
        dates = ["-startdate", valid[0], "-enddate", valid[1]] if valid else ["-days", "30"]
        _openssl(
            "ca",
            "-batch",
            "-notext",
            "-config",
            str(self.root / "ca.cnf"),
            "-cert",
            str(self.ca),
            "-keyfile",
            str(self.ca_key),
            "-in",
            str(csr),
            "-out",
            str(cert),
            "-extfile",
            str(ext),
            "-extensions",
            "ext",
            *dates,
            cwd=folder,
        )
        csr.unlink()
        return cert, key

    def server(
        self, folder: Path, name: str, addresses: tuple[str, ...], expired: bool = False
    ) -> ServerCert:
        """A server certificate for DNS `name` and the IP `addresses`; `expired`: valid only
        for one day in 2020."""
        alt = ",".join([f"DNS:{name}", *(f"IP:{a}" for a in addresses)])
        valid = ("20200101000000Z", "20200102000000Z") if expired else None
        cert, key = self._sign(
            folder, name, f"subjectAltName = {alt}\nextendedKeyUsage = serverAuth", valid
        )
        return ServerCert(self.ca, cert, key)

    def client(self, folder: Path, name: str = "rocmtui", expired: bool = False) -> ClientCert:
        """A client certificate; `expired`: valid only for one day in 2020."""
        valid = ("20200101000000Z", "20200102000000Z") if expired else None
        cert, key = self._sign(folder, name, "extendedKeyUsage = clientAuth", valid)
        ca = folder / "ca.pem"
        ca.write_bytes(self.ca.read_bytes())  # DOCKER_CERT_PATH wants all three side by side
        return ClientCert(ca, cert, key)
