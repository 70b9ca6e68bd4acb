CREATE TABLE `revoked_families` (
	`family_id` text PRIMARY KEY NOT NULL,
	`revoked_at` text NOT NULL
);
--> statement-breakpoint
-- Refresh tokens issued before sessions had families cannot be tied to a session, so a reuse of one
-- could not end what it started: they are revoked here, and their holders sign in again once.
UPDATE `refresh_tokens` SET `revoked` = 1 WHERE `family_id` IS NULL;
