CREATE TABLE "cluster_nodes" (
	"rowid" bigserial NOT NULL,
	"node_id" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"heartbeat_at" bigint NOT NULL,
	CONSTRAINT "cluster_nodes_rowid_unique" UNIQUE("rowid")
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "owner_node" text;