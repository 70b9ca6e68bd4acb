-- psk_key_id held HMAC-SHA256(PSK, a fixed label): a fast, unsalted test of PSK guesses for whoever reads the database,
-- a backup or a dump. It now holds that key id's lookup digest, an HMAC under a key of the gateway's PSK vault
-- (domains/federation/psk-vault.ts), and only on WAITING receiver records. Every old value goes; the owning process
-- computes the new ones from the sealed PSKs of the WAITING receivers at start (domains/federation/upkeep.ts).
UPDATE federations SET psk_key_id = NULL;
