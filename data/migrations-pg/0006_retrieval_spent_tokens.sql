CREATE TABLE "retrieval_spent_tokens" (
	"rowid" bigserial NOT NULL,
	"nonce" text PRIMARY KEY NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "retrieval_spent_tokens_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
CREATE INDEX "retrieval_spent_tokens_expiry" ON "retrieval_spent_tokens" USING btree ("expires_at");