CREATE TABLE `changes` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`topic` text NOT NULL,
	`key` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `mesh_replay` (
	`peer_id` text NOT NULL,
	`nonce` text NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`peer_id`, `nonce`)
);
--> statement-breakpoint
CREATE INDEX `mesh_replay_expiry` ON `mesh_replay` (`expires_at`);