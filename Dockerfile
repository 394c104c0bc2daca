# syntax=docker/dockerfile:1
# Build: compile TypeScript with the dev dependencies, then keep only production ones.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/verifier/package.json ./packages/verifier/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/verifier/tsconfig.build.json ./packages/verifier/
COPY packages/verifier/src ./packages/verifier/src
COPY src ./src
COPY migrations ./migrations
COPY examples ./examples
RUN npm run build && npm prune --omit=dev

# Runtime: no compiler, no dev dependencies, not root.
FROM node:24-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# node_modules/@gatehouse/verifier is a workspace link to here.
COPY --from=build /app/packages/verifier/package.json ./packages/verifier/
COPY --from=build /app/packages/verifier/dist ./packages/verifier/dist
COPY views ./views
# `gatehouse …`, the operator's command line (docs/operating/command-line.md): without sources
# in the image, bin/gatehouse.js runs the build.
COPY bin ./bin
RUN ln -s /app/bin/gatehouse.js /usr/local/bin/gatehouse \
  && mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
VOLUME ["/app/data"]
# Liveness, not readiness: during a database outage the process answers 503s and recovers by
# itself (docs/operating/backups-and-upgrades.md "Failures and recovery"); /readyz is for load balancers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3000/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Migrations run on start-up (idempotent), so a new image upgrades the schema by itself.
CMD ["node", "dist/src/server.js"]
