CREATE TABLE `retrieval_spent_tokens` (
	`nonce` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `retrieval_spent_tokens_expiry` ON `retrieval_spent_tokens` (`expires_at`);